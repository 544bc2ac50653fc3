// A unary method of a service on gRPC's completion-queue API: each call is
// handled on the polling thread that received it (completion_queue_threads.h)
// and answered whenever its handler finishes, from any thread.
#ifndef DISTFLOW_DISTRIBUTED_RPC_SERVER_UNARY_CALL_H_
#define DISTFLOW_DISTRIBUTED_RPC_SERVER_UNARY_CALL_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "base/cancellation.h"
#include "distributed/rpc/callback_tag.h"
#include "distributed/rpc/completion_queue_threads.h"
#include "grpcpp/grpcpp.h"

namespace distflow {

template <typename Request, typename Response>
struct UnaryMethod {
  using Writer = grpc::ServerAsyncResponseWriter<Response>;
  // Names the method in errors ("RunGraph").
  std::string name = "an RPC";
  // Asks the server for the next call (the generated RequestFoo).
  std::function<void(grpc::ServerContext*, Request*, Writer*,
                     grpc::ServerCompletionQueue*, void* tag)>
      request;
  // Handles one call: answers by calling `finish` exactly once, now or later
  // and from any thread. `request` and `response` live until then, and until
  // `handle` returns.
  std::function<void(const Request* request, Response* response,
                     std::function<void(const grpc::Status&)> finish)>
      handle;
  // Instead of `handle`, for work that should stop once nobody waits for
  // its answer: the same, with `cancel`, which is cancelled when the call
  // ends without its answer reaching the caller and lives as long as
  // `request`.
  std::function<void(const Request* request, Response* response,
                     std::function<void(const grpc::Status&)> finish,
                     CancellationManager* cancel)>
      handle_cancellable;
  // Instead of `handle`, for a method whose errors and limits name the
  // caller: the same, with the caller's address as gRPC names it
  // ("ipv4:10.0.0.2:51234").
  std::function<void(const std::string& peer, const Request* request,
                     Response* response,
                     std::function<void(const grpc::Status&)> finish)>
      handle_from_peer;
  // If set: called (on a polling thread) when a call ends without its answer
  // reaching the caller: the caller cancelled it, went away, or the server
  // stopped.
  std::function<void(const Request& request)> on_cancel;
};

// Points `method->request` at `service`'s generated RequestFoo
// (`request_fn`), with one queue for new calls and for their events.
template <typename Service, typename Request, typename Response,
          typename RequestFn>
void SetRequestFunction(UnaryMethod<Request, Response>* method,
                        Service* service, RequestFn request_fn) {
  method->request = [service, request_fn](
                        grpc::ServerContext* ctx, Request* request,
                        grpc::ServerAsyncResponseWriter<Response>* writer,
                        grpc::ServerCompletionQueue* cq, void* tag) {
    (service->*request_fn)(ctx, request, writer, cq, cq, tag);
  };
}

// One call of `method`: waits for it, then handles it and waits for the next.
template <typename Request, typename Response>
class ServerUnaryCall : public CqTag {
 public:
  using Method = UnaryMethod<Request, Response>;

  // Starts waiting for the next call of `method` (which outlives the queue).
  static void Await(const Method* method, grpc::ServerCompletionQueue* cq,
                    CompletionQueueThreads* threads) {
    auto* call = new ServerUnaryCall(method, cq, threads);
    if (!call->Track()) {
      call->Release();  // the server is stopping
      return;
    }
    if (call->WatchesForEnd()) {
      call->ctx_.AsyncNotifyWhenDone(&call->done_tag_);
    }
    method->request(&call->ctx_, &call->request_, &call->writer_, cq, call);
  }

 private:
  ServerUnaryCall(const Method* method, grpc::ServerCompletionQueue* cq,
                  CompletionQueueThreads* threads)
      : CqTag(threads),
        method_(method),
        cq_(cq),
        writer_(&ctx_),
        done_tag_(this, threads) {
    if (method->handle_cancellable) cancel_.emplace();
  }

  bool WatchesForEnd() const {
    return method_->on_cancel || method_->handle_cancellable;
  }

  void OnEvent(bool ok) override {
    if (!received_) {
      received_ = true;
      if (!ok) {  // the server is shutting down; no call came
        Release();
        return;
      }
      // The handler's return, the finish and (if asked for) the done
      // events are still to come: a handler may read the request after it
      // has answered.
      pending_ = WatchesForEnd() ? 3 : 2;
      Await(method_, cq_, threads());
      // (Once only: a handler that throws after answering is not answered
      // again below.)
      auto answered = std::make_shared<std::atomic<bool>>(false);
      auto finish = [this, answered](const grpc::Status& s) {
        if (answered->exchange(true)) return;
        writer_.Finish(response_, s, this);
      };
      // The last line of defence: a handler that throws fails its call
      // instead of ending the process (no exception crosses the RPC
      // boundary).
      try {
        if (method_->handle_cancellable) {
          method_->handle_cancellable(&request_, &response_, finish, &*cancel_);
        } else if (method_->handle_from_peer) {
          method_->handle_from_peer(ctx_.peer(), &request_, &response_, finish);
        } else {
          method_->handle(&request_, &response_, finish);
        }
      } catch (const std::exception& e) {
        finish(grpc::Status(
            grpc::StatusCode::INTERNAL,
            std::string(method_->name) +
                " failed on the task that served it: " + e.what()));
      }
      Unref();
      return;
    }
    Unref();  // the answer was sent (or the call had gone)
  }

  friend class CallEndTag<ServerUnaryCall>;
  void OnEnded() {
    if (ctx_.IsCancelled()) {
      if (method_->on_cancel) method_->on_cancel(request_);
      if (cancel_) cancel_->StartCancel();
    }
    Unref();
  }

  void Unref() {
    if (pending_.fetch_sub(1) == 1) Release();
  }

  const Method* const method_;
  grpc::ServerCompletionQueue* const cq_;
  grpc::ServerContext ctx_;
  Request request_;
  Response response_;
  typename Method::Writer writer_;
  CallEndTag<ServerUnaryCall> done_tag_;
  // Only for a method with handle_cancellable: the worker's many unary
  // calls (pushes, RunGraph) carry none.
  std::optional<CancellationManager> cancel_;
  bool received_ = false;  // only the polling thread of the event reads it
  std::atomic<int> pending_{0};
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_SERVER_UNARY_CALL_H_
