// The "grpc://host:port" session: the graph lives on the master of the task
// at that address, which runs it on the cluster. Registered as the "grpc"
// session factory when this file is linked (the distflow target links it
// whole).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "distributed/local_master.h"
#include "distributed/master.h"
#include "distributed/rpc/grpc_remote_worker.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/local_socket.h"
#include "distributed/rpc/master_stream_client.h"
#include "proto/master.grpc.pb.h"
#include "runtime/session_factory.h"

namespace distflow {
namespace {

constexpr char kScheme[] = "grpc://";

// The channel to the master of `target`: its task's Unix socket when that
// task is another process of this host with one, TCP otherwise. (A master in
// this process is called directly; its channel stays unused.)
std::shared_ptr<grpc::Channel> ChannelToMaster(const std::string& target) {
  const std::string address = target.substr(sizeof(kScheme) - 1);
  if (FindLocalMaster(target) == nullptr && LocalSocketAllowedByEnv()) {
    if (auto channel = NewLocalSocketChannel(address, /*task=*/"")) {
      return channel;
    }
  }
  return NewChannel(address);
}

class GrpcSession : public Session {
 public:
  explicit GrpcSession(const std::string& target)
      : GrpcSession(target, ChannelToMaster(target)) {}
  GrpcSession(const std::string& target, std::shared_ptr<grpc::Channel> channel)
      : target_(target),
        address_(target.substr(sizeof(kScheme) - 1)),
        stub_(proto::MasterService::NewStub(channel)),
        stream_(channel, address_) {}
  ~GrpcSession() override { (void)Close(); }

  absl::Status Extend(const proto::GraphDef& graph) override {
    absl::MutexLock lock(&mu_);
    if (closed_)
      return absl::FailedPreconditionError("Extend on a closed session");
    if (handle_.empty()) return CreateLocked(graph);
    if (auto master = FindLocalMaster(target_)) {
      return master->ExtendSession(handle_, graph);
    }
    proto::ExtendSessionRequest request;
    request.set_session_handle(handle_);
    *request.mutable_graph() = graph;
    proto::ExtendSessionResponse response;
    grpc::ClientContext ctx;
    SetDeadline(&ctx, deadlines_.control_ms);
    return NameLostSession(
        FromGrpcCallStatus(stub_->ExtendSession(&ctx, request, &response),
                           "(master)", address_, "ExtendSession"));
  }

  absl::StatusOr<std::vector<Tensor>> Run(
      const std::vector<std::pair<std::string, Tensor>>& feeds,
      const std::vector<std::string>& fetches,
      const std::vector<std::string>& targets) override {
    proto::RunStepRequest request;
    {
      absl::MutexLock lock(&mu_);
      if (closed_)
        return absl::FailedPreconditionError("Run on a closed session");
      if (handle_.empty()) {
        absl::Status s = CreateLocked(proto::GraphDef());
        if (!s.ok()) return s;
      }
      request.set_session_handle(handle_);
    }
    if (auto master = FindLocalMaster(target_)) {
      // The task's master is in this process: no RPC, no tensor copies.
      return master->RunStep(request.session_handle(), feeds, fetches, targets);
    }
    // Feeds and fetches of any size, without protobuf copies.
    auto out = stream_.RunStep(request.session_handle(), feeds, fetches,
                               targets, deadlines_.step_ms);
    if (!out.ok()) return NameLostSession(out.status());
    return out;
  }

  absl::Status Close() override {
    std::string handle;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return absl::OkStatus();
      closed_ = true;
      handle = handle_;
      if (keep_alive_call_ != nullptr) keep_alive_call_->TryCancel();
    }
    if (keep_alive_.joinable()) keep_alive_.join();
    if (handle.empty()) return absl::OkStatus();
    if (auto master = FindLocalMaster(target_)) {
      return master->CloseSession(handle);
    }
    proto::CloseSessionRequest request;
    request.set_session_handle(handle);
    proto::CloseSessionResponse response;
    grpc::ClientContext ctx;
    SetDeadline(&ctx, deadlines_.control_ms);
    return FromGrpcCallStatus(stub_->CloseSession(&ctx, request, &response),
                              "(master)", address_, "CloseSession");
  }

 private:
  // The master says only which task lost the session; the user knows the
  // master by the address they gave, and needs to know what to do.
  absl::Status NameLostSession(const absl::Status& s) const {
    if (!IsSessionLost(s)) return s;
    return absl::AbortedError(absl::StrCat(
        "the master at ", address_, " (session target ", target_,
        ") lost this session because its task restarted; create a new "
        "session (a MonitoredTrainingSession does so by itself and recovers "
        "the model). The master said: ",
        s.message()));
  }
  static void SetDeadline(grpc::ClientContext* ctx, int64_t ms) {
    ctx->set_deadline(DeadlineAfterMs(ms));
  }
  absl::Status CreateLocked(const proto::GraphDef& graph)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (auto master = FindLocalMaster(target_)) {
      auto handle = master->CreateSession(graph);
      if (handle.ok()) handle_ = *handle;
      return handle.status();
    }
    proto::CreateSessionRequest request;
    *request.mutable_graph() = graph;
    request.set_client_keeps_alive(true);
    proto::CreateSessionResponse response;
    grpc::ClientContext ctx;
    SetDeadline(&ctx, deadlines_.control_ms);
    absl::Status s =
        FromGrpcCallStatus(stub_->CreateSession(&ctx, request, &response),
                           "(master)", address_, "CreateSession");
    if (s.ok()) handle_ = response.session_handle();
    if (s.ok() && response.keep_alive_ms() > 0) {
      keep_alive_ = std::thread(&GrpcSession::KeepAlive, this, handle_,
                                absl::Milliseconds(response.keep_alive_ms()));
    }
    return s;
  }

  // Tells the master every `interval` that this client is alive, whether or
  // not a step runs, until the session closes or the master no longer has
  // it. The master gives up on the client after three intervals of silence,
  // so a call that fails (the master busy or unreachable for a while) is
  // made again sooner.
  void KeepAlive(const std::string& handle, absl::Duration interval) {
    proto::KeepSessionRequest request;
    request.set_session_handle(handle);
    absl::Duration wait = interval;
    absl::MutexLock lock(&mu_);
    while (!closed_) {
      mu_.AwaitWithTimeout(absl::Condition(&closed_), wait);
      if (closed_) return;
      grpc::ClientContext ctx;
      SetDeadline(
          &ctx, std::max<int64_t>(1, absl::ToInt64Milliseconds(interval / 2)));
      keep_alive_call_ = &ctx;
      mu_.Unlock();
      proto::KeepSessionResponse response;
      const grpc::Status s = stub_->KeepSession(&ctx, request, &response);
      mu_.Lock();
      keep_alive_call_ = nullptr;
      // The session is gone: its steps will say why.
      if (s.error_code() == grpc::StatusCode::NOT_FOUND ||
          s.error_code() == grpc::StatusCode::ABORTED) {
        return;
      }
      wait = s.ok() ? interval : interval / 4;
    }
  }

  const std::string target_;
  const std::string address_;
  const RpcDeadlines deadlines_;
  std::unique_ptr<proto::MasterService::Stub> stub_;
  MasterStreamClient stream_;
  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::string handle_ ABSL_GUARDED_BY(mu_);
  // Runs KeepAlive while the session of a master in another process is
  // open; its call in flight, for Close to cancel.
  std::thread keep_alive_;
  grpc::ClientContext* keep_alive_call_ ABSL_GUARDED_BY(mu_) = nullptr;
};

class GrpcSessionFactory : public SessionFactory {
 public:
  bool AcceptsTarget(const std::string& target) const override {
    return absl::StartsWith(target, kScheme);
  }
  absl::StatusOr<std::unique_ptr<Session>> NewSession(
      const SessionOptions& options) override {
    if (options.target.size() <= sizeof(kScheme) - 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "session target '", options.target, "' names no host:port"));
    }
    return std::unique_ptr<Session>(new GrpcSession(options.target));
  }
};

const bool kRegistered = [] {
  RegisterSessionFactory("grpc", std::make_unique<GrpcSessionFactory>());
  return true;
}();

}  // namespace
}  // namespace distflow
