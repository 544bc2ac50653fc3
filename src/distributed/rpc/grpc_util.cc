#include "distributed/rpc/grpc_util.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <limits>

#include "absl/base/call_once.h"
#include "absl/strings/str_cat.h"

namespace distflow {
namespace {
constexpr int kKeepaliveTimeMs = 2000;
constexpr int kKeepaliveTimeoutMs = 5000;
constexpr int kMaxFrameSize = (1 << 24) - 1;  // HTTP/2's largest
constexpr int kLookaheadBytes = 64 << 20;
// How long one connection attempt may take. gRPC takes it from the minimum
// reconnect backoff: at 100 ms, a connection whose handshake was not seen in
// time on a busy machine failed its first calls with UNAVAILABLE.
constexpr int kMinConnectTimeoutMs = 5000;
// glibc's largest dynamic mmap threshold on 64-bit systems.
constexpr int kMallocMmapThreshold = 32 << 20;

// Whether the user chose glibc's malloc settings for this process.
bool UserTunedMalloc() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return (tunables != nullptr &&
          std::strstr(tunables, "glibc.malloc.") != nullptr) ||
         std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr ||
         std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr;
}

}  // namespace

void KeepReceiveBuffersMapped() {
  static absl::once_flag once;
  absl::call_once(once, [] {
    if (UserTunedMalloc()) return;
#ifdef __GLIBC__
    // gRPC reads a connection into 64 KiB blocks from malloc and frees them
    // once a message is handed over. Under glibc's starting limits (a heap
    // top over 128 KiB goes back to the system) the freed blocks are
    // unmapped at once, and the next message's reads fault each page in
    // again, zeroed: a page fault per 4 KiB received. These are the limits
    // glibc's own heuristic moves to once a process frees a 32 MiB block, set
    // from the start: blocks under 32 MiB come from the heap, and up to
    // 64 MiB of free heap top is kept for reuse.
    mallopt(M_MMAP_THRESHOLD, kMallocMmapThreshold);
    mallopt(M_TRIM_THRESHOLD, 2 * kMallocMmapThreshold);
#endif
  });
}

absl::Status FromGrpcStatus(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      s.error_message());
}

grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()),
                      std::string(s.message()));
}

bool EnabledByEnv(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr || std::strcmp(value, "0") != 0;
}

absl::Status FromGrpcCallStatus(const grpc::Status& s, const std::string& task,
                                const std::string& address,
                                const std::string& method) {
  if (s.ok()) return absl::OkStatus();
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
    return absl::UnavailableError(
        absl::StrCat("task ", task, " at ", address, " is unavailable (",
                     method, ": ", s.error_message(),
                     "); check that its process is running and reachable"));
  }
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return absl::DeadlineExceededError(absl::StrCat(
        "task ", task, " at ", address, " did not answer ", method,
        " in time (", s.error_message(), "); it may be hung or overloaded"));
  }
  if (s.error_code() == grpc::StatusCode::CANCELLED) {
    // gRPC's own message is a bare "CANCELLED" when the server cancels the
    // call as it shuts down: say which task, and what that usually means.
    return absl::CancelledError(absl::StrCat(
        method, " on task ", task, " at ", address, " was cancelled (",
        s.error_message(),
        "); the task was stopped or shut down while the call was in flight, "
        "or this process cancelled the call; check whether the task is "
        "still running"));
  }
  return FromGrpcStatus(s);
}

std::shared_ptr<grpc::Channel> NewChannel(const std::string& address) {
  KeepReceiveBuffersMapped();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, kMinConnectTimeoutMs);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Every pair of tasks gets its own connection (no sharing between the
  // master's and the worker's channels to one task).
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // Large tensors: big HTTP/2 frames and flow-control windows.
  args.SetInt(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, kMaxFrameSize);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kLookaheadBytes);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                   args);
}

void ConfigureServerBuilder(grpc::ServerBuilder* builder) {
  KeepReceiveBuffersMapped();
  builder->SetMaxReceiveMessageSize(std::numeric_limits<int>::max());
  builder->SetMaxSendMessageSize(std::numeric_limits<int>::max());
  // A second server on a busy port must fail, not share it.
  builder->AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                              kKeepaliveTimeoutMs);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder->AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1000);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, kMaxFrameSize);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES,
                              kLookaheadBytes);
}

}  // namespace distflow
