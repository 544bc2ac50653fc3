#include "distributed/rpc/grpc_worker_service.h"

#include "absl/strings/str_cat.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/tensor_wire.h"
#include "proto/worker.grpc.pb.h"

namespace distflow {
namespace {

// Idle receive buffers a worker keeps for reuse: a few steps' worth of large
// tensors.
constexpr size_t kMaxIdleRecvBytes = size_t{1} << 30;

using Base = proto::WorkerService::WithCallbackMethod_GetStatus<
    proto::WorkerService::WithCallbackMethod_RegisterGraph<
        proto::WorkerService::WithCallbackMethod_DeregisterGraph<
            proto::WorkerService::WithCallbackMethod_RunGraph<
                proto::WorkerService::WithCallbackMethod_AbortStep<
                    proto::WorkerService::WithRawCallbackMethod_PushTensor<
                        proto::WorkerService::WithCallbackMethod_Shutdown<
                            proto::WorkerService::Service>>>>>>>;

// A RunGraph whose caller goes away (its master died, or cancelled the call)
// aborts its step here, so that the step's ops waiting for tensors from the
// dead task do not wait forever.
class RunGraphReactor : public grpc::ServerUnaryReactor {
 public:
  RunGraphReactor(Worker* worker, int64_t step_id)
      : worker_(worker), step_id_(step_id) {}
  void OnCancel() override {
    proto::AbortStepRequest request;
    request.set_step_id(step_id_);
    request.set_code(static_cast<int>(absl::StatusCode::kCancelled));
    request.set_message(absl::StrCat("the master of step ", step_id_,
                                     " cancelled it or went away"));
    proto::AbortStepResponse response;
    worker_->AbortStepAsync(&request, &response, [](const absl::Status&) {});
  }
  void OnDone() override { delete this; }

 private:
  Worker* const worker_;
  const int64_t step_id_;
};

class GrpcWorkerService : public Base {
 public:
  GrpcWorkerService(Worker* worker, bool same_host_reads)
      : worker_(worker),
        assembler_(RecvBufferPool::Create(kMaxIdleRecvBytes), same_host_reads) {
  }

  grpc::ServerUnaryReactor* GetStatus(
      grpc::CallbackServerContext* ctx, const proto::GetStatusRequest* request,
      proto::GetStatusResponse* response) override {
    return Forward(ctx, request, response, &Worker::GetStatusAsync);
  }
  grpc::ServerUnaryReactor* RegisterGraph(
      grpc::CallbackServerContext* ctx,
      const proto::RegisterGraphRequest* request,
      proto::RegisterGraphResponse* response) override {
    return Forward(ctx, request, response, &Worker::RegisterGraphAsync);
  }
  grpc::ServerUnaryReactor* DeregisterGraph(
      grpc::CallbackServerContext* ctx,
      const proto::DeregisterGraphRequest* request,
      proto::DeregisterGraphResponse* response) override {
    return Forward(ctx, request, response, &Worker::DeregisterGraphAsync);
  }
  grpc::ServerUnaryReactor* RunGraph(
      grpc::CallbackServerContext* ctx, const proto::RunGraphRequest* request,
      proto::RunGraphResponse* response) override {
    auto* reactor = new RunGraphReactor(worker_, request->step_id());
    // A small partition runs to its end here, on gRPC's thread, and answers
    // before this returns (which gRPC allows); a larger one answers later.
    worker_->RunGraphAsync(request, response, Finisher(reactor));
    return reactor;
  }
  grpc::ServerUnaryReactor* AbortStep(
      grpc::CallbackServerContext* ctx, const proto::AbortStepRequest* request,
      proto::AbortStepResponse* response) override {
    auto* reactor = ctx->DefaultReactor();
    assembler_.DropStep(request->step_id());
    worker_->AbortStepAsync(request, response, Finisher(reactor));
    return reactor;
  }
  grpc::ServerUnaryReactor* PushTensor(grpc::CallbackServerContext* ctx,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override {
    auto* reactor = ctx->DefaultReactor();
    // The (empty) PushTensorResponse: gRPC refuses to send an unset buffer.
    grpc::Slice empty;
    *response = grpc::ByteBuffer(&empty, 1);
    auto pushed = assembler_.Add(*request);
    if (!pushed.ok()) {
      reactor->Finish(ToGrpcStatus(pushed.status()));
    } else if (!pushed->same_host_refused.empty()) {
      proto::PushTensorResponse refused;
      refused.set_same_host_refused(pushed->same_host_refused);
      grpc::Slice bytes(refused.SerializeAsString());
      *response = grpc::ByteBuffer(&bytes, 1);
      reactor->Finish(grpc::Status::OK);
    } else if (!pushed->value.IsInitialized()) {
      reactor->Finish(grpc::Status::OK);  // more chunks to come
    } else {
      worker_->PushTensorAsync(pushed->step_id, pushed->key, pushed->value,
                               Finisher(reactor));
    }
    return reactor;
  }
  grpc::ServerUnaryReactor* Shutdown(
      grpc::CallbackServerContext* ctx, const proto::ShutdownRequest* request,
      proto::ShutdownResponse* response) override {
    return Forward(ctx, request, response, &Worker::ShutdownAsync);
  }

 private:
  // Hands a unary call to the worker, which answers through the reactor.
  template <typename Request, typename Response>
  grpc::ServerUnaryReactor* Forward(grpc::CallbackServerContext* ctx,
                                    const Request* request, Response* response,
                                    void (Worker::*method)(const Request*,
                                                           Response*,
                                                           StatusCallback)) {
    auto* reactor = ctx->DefaultReactor();
    (worker_->*method)(request, response, Finisher(reactor));
    return reactor;
  }

  static StatusCallback Finisher(grpc::ServerUnaryReactor* reactor) {
    return
        [reactor](const absl::Status& s) { reactor->Finish(ToGrpcStatus(s)); };
  }

  Worker* const worker_;
  PushAssembler assembler_;
};

}  // namespace

std::unique_ptr<grpc::Service> NewGrpcWorkerService(Worker* worker,
                                                    bool same_host_reads) {
  return std::make_unique<GrpcWorkerService>(worker, same_host_reads);
}

}  // namespace distflow
