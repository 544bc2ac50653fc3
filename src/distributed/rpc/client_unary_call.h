// A unary call made on a completion queue polled by distflow's own threads
// (completion_queue_threads.h): its callback runs on the polling thread that
// read the reply.
#ifndef DISTFLOW_DISTRIBUTED_RPC_CLIENT_UNARY_CALL_H_
#define DISTFLOW_DISTRIBUTED_RPC_CLIENT_UNARY_CALL_H_

#include <functional>
#include <memory>
#include <utility>

#include "absl/synchronization/notification.h"
#include "distributed/rpc/completion_queue_threads.h"
#include "grpcpp/grpcpp.h"

namespace distflow {

class ClientUnaryCall : public CqTag {
 public:
  // Starts a call (the generated PrepareAsyncFoo, StartCall and Finish with
  // the given status and tag) and returns its response reader.
  using StartFn = std::function<std::shared_ptr<void>(
      grpc::ClientContext*, grpc::CompletionQueue*, grpc::Status*, void* tag)>;
  using DoneFn = std::function<void(const grpc::Status&)>;

  // Makes the call with `ctx` (its deadline set) on `threads`' queue; `done`
  // gets its status there. If the queue is closing, the call is not made and
  // `done` gets CANCELLED at once.
  static void Start(CompletionQueueThreads* threads,
                    std::shared_ptr<grpc::ClientContext> ctx,
                    const StartFn& start, DoneFn done) {
    auto* call = new ClientUnaryCall(threads, std::move(ctx), std::move(done));
    if (!call->Track()) {
      call->done_(grpc::Status(grpc::StatusCode::CANCELLED,
                               "this task's RPC layer is shutting down"));
      call->Release();
      return;
    }
    call->reader_ =
        start(call->ctx_.get(), threads->cq(), &call->status_, call);
    call->started_.Notify();
  }

  void OnEvent(bool /*ok*/) override {
    // The reply can arrive before Start has stored the reader.
    started_.WaitForNotification();
    done_(status_);
    Release();
  }
  void Cancel() override { ctx_->TryCancel(); }

 private:
  ClientUnaryCall(CompletionQueueThreads* threads,
                  std::shared_ptr<grpc::ClientContext> ctx, DoneFn done)
      : CqTag(threads), ctx_(std::move(ctx)), done_(std::move(done)) {}

  std::shared_ptr<grpc::ClientContext> ctx_;
  // Declared after the context: destroyed first (it lives in the call).
  std::shared_ptr<void> reader_;
  grpc::Status status_;
  DoneFn done_;
  absl::Notification started_;
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_CLIENT_UNARY_CALL_H_
