// Conversions between gRPC and absl status, and the channel and server
// settings every distflow connection uses.
#ifndef DISTFLOW_DISTRIBUTED_RPC_GRPC_UTIL_H_
#define DISTFLOW_DISTRIBUTED_RPC_GRPC_UTIL_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "base/clock.h"
#include "grpcpp/grpcpp.h"

namespace distflow {

absl::Status FromGrpcStatus(const grpc::Status& s);
grpc::Status ToGrpcStatus(const absl::Status& s);

// A call deadline `ms` milliseconds from now on gRPC's monotonic clock (for
// ClientContext::set_deadline and Server::Shutdown): a wall clock set forward
// or back does not move it.
inline gpr_timespec DeadlineAfterMs(int64_t ms) {
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                      gpr_time_from_millis(ms, GPR_TIMESPAN));
}
// The same instant as `at` of the steady clock, for gRPC (an alarm's time).
inline gpr_timespec GrpcTime(SteadyTime at) {
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(at - SteadyNow())
          .count();
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                      gpr_time_from_nanos(ns > 0 ? ns : 0, GPR_TIMESPAN));
}

// Whether a switch of the environment is on: true unless `name` is set to
// "0" (the switches that turn a transport path off, for measuring).
bool EnabledByEnv(const char* name);

// A status from a call to `address` (the task `task`): transport failures
// (UNAVAILABLE, DEADLINE_EXCEEDED) and cancellations (such as a task stopped
// in the middle of a call) name the task and address and say what to check;
// other errors come from the remote code and pass unchanged.
absl::Status FromGrpcCallStatus(const grpc::Status& s, const std::string& task,
                                const std::string& address,
                                const std::string& method);

// A channel to "host:port" without message size limits, with keepalive pings
// (a hung peer is detected within seconds) and quick reconnection (a
// restarted task is reached soon after it is back).
std::shared_ptr<grpc::Channel> NewChannel(const std::string& address);

// Applies the matching server settings.
void ConfigureServerBuilder(grpc::ServerBuilder* builder);

// Sets glibc's malloc to keep freed memory of up to 64 MiB at the top of its
// heaps mapped, so that the buffers gRPC reads large messages into are reused
// instead of faulted in afresh for every message (see docs/benchmarks.md).
// Process-wide; done once, by the first NewChannel or ConfigureServerBuilder,
// unless the user set malloc's limits (GLIBC_TUNABLES=glibc.malloc.*,
// MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_THRESHOLD_).
void KeepReceiveBuffersMapped();

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_GRPC_UTIL_H_
