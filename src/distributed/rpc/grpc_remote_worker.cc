#include "distributed/rpc/grpc_remote_worker.h"

#include <atomic>
#include <chrono>
#include <utility>
#include <vector>

#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/tensor_wire.h"
#include "grpcpp/generic/generic_stub.h"
#include "proto/worker.grpc.pb.h"

namespace distflow {
namespace {

constexpr char kPushTensorMethod[] = "/distflow.proto.WorkerService/PushTensor";

class GrpcRemoteWorker : public WorkerInterface {
 public:
  GrpcRemoteWorker(std::shared_ptr<grpc::Channel> channel, std::string task,
                   std::string address, RpcDeadlines deadlines)
      : stub_(proto::WorkerService::NewStub(channel)),
        generic_(channel),
        task_(std::move(task)),
        address_(std::move(address)),
        deadlines_(deadlines) {}

  void GetStatusAsync(const proto::GetStatusRequest* request,
                      proto::GetStatusResponse* response,
                      StatusCallback done) override {
    auto* ctx = NewContext(deadlines_.control_ms);
    stub_->async()->GetStatus(ctx, request, response,
                              Finish(ctx, "GetStatus", std::move(done)));
  }
  void RegisterGraphAsync(const proto::RegisterGraphRequest* request,
                          proto::RegisterGraphResponse* response,
                          StatusCallback done) override {
    auto* ctx = NewContext(deadlines_.control_ms);
    stub_->async()->RegisterGraph(
        ctx, request, response, Finish(ctx, "RegisterGraph", std::move(done)));
  }
  void DeregisterGraphAsync(const proto::DeregisterGraphRequest* request,
                            proto::DeregisterGraphResponse* response,
                            StatusCallback done) override {
    auto* ctx = NewContext(deadlines_.control_ms);
    stub_->async()->DeregisterGraph(
        ctx, request, response,
        Finish(ctx, "DeregisterGraph", std::move(done)));
  }
  void RunGraphAsync(const proto::RunGraphRequest* request,
                     proto::RunGraphResponse* response,
                     StatusCallback done) override {
    auto* ctx = NewContext(deadlines_.step_ms);
    stub_->async()->RunGraph(ctx, request, response,
                             Finish(ctx, "RunGraph", std::move(done)));
  }
  void AbortStepAsync(const proto::AbortStepRequest* request,
                      proto::AbortStepResponse* response,
                      StatusCallback done) override {
    auto* ctx = NewContext(deadlines_.control_ms);
    stub_->async()->AbortStep(ctx, request, response,
                              Finish(ctx, "AbortStep", std::move(done)));
  }
  void ShutdownAsync(const proto::ShutdownRequest* request,
                     proto::ShutdownResponse* response,
                     StatusCallback done) override {
    auto* ctx = NewContext(deadlines_.control_ms);
    stub_->async()->Shutdown(ctx, request, response,
                             Finish(ctx, "Shutdown", std::move(done)));
  }

  void PushTensorAsync(int64_t step_id, const std::string& key,
                       const Tensor& value, StatusCallback done) override {
    // Every chunk goes at once (they share the tensor's buffer); the push is
    // done when the last is acknowledged, with the first error if any.
    struct State {
      std::vector<grpc::ByteBuffer> requests;
      std::vector<grpc::ByteBuffer> responses;
      std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
      std::atomic<int> pending{0};
      absl::Mutex mu;
      absl::Status status;
      StatusCallback done;
    };
    auto state = std::make_shared<State>();
    state->requests = EncodePushTensor(step_id, key, value);
    const size_t n = state->requests.size();
    state->responses.resize(n);
    state->pending = static_cast<int>(n);
    state->done = std::move(done);
    for (size_t i = 0; i < n; ++i) {
      state->contexts.emplace_back(NewContext(deadlines_.step_ms));
    }
    for (size_t i = 0; i < n; ++i) {
      generic_.UnaryCall(state->contexts[i].get(), kPushTensorMethod,
                         grpc::StubOptions(), &state->requests[i],
                         &state->responses[i], [this, state](grpc::Status s) {
                           if (!s.ok()) {
                             absl::MutexLock lock(&state->mu);
                             if (state->status.ok()) {
                               state->status = FromGrpcCallStatus(
                                   s, task_, address_, "PushTensor");
                             }
                           }
                           if (state->pending.fetch_sub(1) == 1) {
                             absl::Status result;
                             {
                               absl::MutexLock lock(&state->mu);
                               result = state->status;
                             }
                             state->done(result);
                           }
                         });
    }
  }

 private:
  static grpc::ClientContext* NewContext(int64_t deadline_ms) {
    auto* ctx = new grpc::ClientContext;
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(deadline_ms));
    return ctx;
  }
  std::function<void(grpc::Status)> Finish(grpc::ClientContext* ctx,
                                           const char* method,
                                           StatusCallback done) {
    return [this, ctx, method, done = std::move(done)](grpc::Status s) {
      delete ctx;
      done(FromGrpcCallStatus(s, task_, address_, method));
    };
  }

  std::unique_ptr<proto::WorkerService::Stub> stub_;
  grpc::GenericStub generic_;
  const std::string task_;
  const std::string address_;
  const RpcDeadlines deadlines_;
};

}  // namespace

std::unique_ptr<WorkerInterface> NewGrpcRemoteWorker(
    std::shared_ptr<grpc::Channel> channel, const std::string& task,
    const std::string& address, const RpcDeadlines& deadlines) {
  return std::make_unique<GrpcRemoteWorker>(std::move(channel), task, address,
                                            deadlines);
}

}  // namespace distflow
