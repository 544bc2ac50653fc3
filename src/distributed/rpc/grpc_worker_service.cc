#include "distributed/rpc/grpc_worker_service.h"

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/push_stream.h"
#include "distributed/rpc/run_graph_stream.h"
#include "distributed/rpc/server_unary_call.h"
#include "distributed/rpc/tensor_wire.h"
#include "proto/worker.grpc.pb.h"

namespace distflow {
namespace {

using Service = proto::WorkerService::WithAsyncMethod_GetStatus<
    proto::WorkerService::WithAsyncMethod_RegisterGraph<
        proto::WorkerService::WithAsyncMethod_DeregisterGraph<
            proto::WorkerService::WithAsyncMethod_RunGraph<
                proto::WorkerService::WithAsyncMethod_RunGraphStream<
                    proto::WorkerService::WithAsyncMethod_AbortStep<
                        proto::WorkerService::WithRawMethod_PushTensor<
                            proto::WorkerService::
                                WithRawMethod_PushTensorStream<
                                    proto::WorkerService::
                                        WithAsyncMethod_Shutdown<
                                            proto::WorkerService::
                                                Service>>>>>>>>>;

using Finish = std::function<void(const grpc::Status&)>;

// The peer that pushes on a data connection stands for in budgets.
constexpr char kDataConnectionPeer[] = "(a data connection)";

StatusCallback Finisher(Finish finish) {
  return [finish = std::move(finish)](const absl::Status& s) {
    finish(ToGrpcStatus(s));
  };
}

class WorkerService : public GrpcWorkerService {
 public:
  WorkerService(Worker* worker, WorkerServiceOptions options)
      : worker_(worker),
        // Large same-host reads are split across the task's intra-op
        // threads, which are idle while the step waits for the tensor.
        assembler_(options.pool, options.same_host_reads,
                   worker->device()->intra_op_pool(), worker->push_budget(),
                   options.partial_timeout) {
    if (!options.data_host.empty()) {
      data_listener_ = std::make_unique<LazyDataListener>(
          options.data_host, options.pool, DataHandlers(), options.task);
    }
    Forward("GetStatus", &get_status_, &Service::RequestGetStatus,
            &Worker::GetStatusAsync);
    Forward("RegisterGraph", &register_graph_, &Service::RequestRegisterGraph,
            &Worker::RegisterGraphAsync);
    Forward("DeregisterGraph", &deregister_graph_,
            &Service::RequestDeregisterGraph, &Worker::DeregisterGraphAsync);
    Forward("RunGraph", &run_graph_, &Service::RequestRunGraph,
            &Worker::RunGraphAsync);
    run_graph_.on_cancel = [this](const proto::RunGraphRequest& request) {
      AbortAbandonedStep(request);
    };
    // The same calls as messages on a stream that stays open between steps.
    run_graph_stream_.request =
        [this](grpc::ServerContext* ctx, RunGraphStreamMethod::Stream* stream,
               grpc::ServerCompletionQueue* cq, void* tag) {
          service_.RequestRunGraphStream(ctx, stream, cq, cq, tag);
        };
    run_graph_.handle = [this](const proto::RunGraphRequest* request,
                               proto::RunGraphResponse* response,
                               Finish finish) {
      RunGraph(request, response, Finisher(std::move(finish)));
    };
    run_graph_stream_.handle = [this](const proto::RunGraphRequest* request,
                                      proto::RunGraphResponse* response,
                                      StatusCallback done) {
      RunGraph(request, response, std::move(done));
    };
    run_graph_stream_.on_cancel =
        [this](const proto::RunGraphRequest& request) {
          AbortAbandonedStep(request);
        };
    Forward("AbortStep", &abort_step_, &Service::RequestAbortStep,
            &Worker::AbortStepAsync);
    abort_step_.handle = [this](const proto::AbortStepRequest* request,
                                proto::AbortStepResponse* response,
                                Finish finish) {
      assembler_.DropStep(request->step_id());
      worker_->AbortStepAsync(request, response, Finisher(std::move(finish)));
    };
    Forward("Shutdown", &shutdown_, &Service::RequestShutdown,
            &Worker::ShutdownAsync);
    push_tensor_.request =
        [this](grpc::ServerContext* ctx, grpc::ByteBuffer* request,
               grpc::ServerAsyncResponseWriter<grpc::ByteBuffer>* writer,
               grpc::ServerCompletionQueue* cq, void* tag) {
          service_.RequestPushTensor(ctx, request, writer, cq, cq, tag);
        };
    push_tensor_.name = "PushTensor";
    push_tensor_.handle_from_peer =
        [this](const std::string& peer, const grpc::ByteBuffer* request,
               grpc::ByteBuffer* response, Finish finish) {
          auto answer = std::make_shared<proto::PushTensorResponse>();
          PushTensor(*request, peer, answer.get(),
                     [answer, response,
                      finish = std::move(finish)](const absl::Status& s) {
                       *response = ProtoToByteBuffer(*answer);
                       finish(ToGrpcStatus(s));
                     });
        };
    // The same pushes as messages on a stream that stays open between steps.
    push_stream_.request = [this](grpc::ServerContext* ctx,
                                  PushStreamMethod::Stream* stream,
                                  grpc::ServerCompletionQueue* cq, void* tag) {
      service_.RequestPushTensorStream(ctx, stream, cq, cq, tag);
    };
    push_stream_.handle_from_peer =
        [this](const std::string& peer, const grpc::ByteBuffer* request,
               proto::PushTensorResponse* response, StatusCallback done) {
          PushTensor(*request, peer, response, std::move(done));
        };
  }

  grpc::Service* service() override { return &service_; }
  LazyDataListener* data_listener() override { return data_listener_.get(); }

  void Start(grpc::ServerCompletionQueue* cq,
             CompletionQueueThreads* threads) override {
    Await(&get_status_, cq, threads);
    Await(&register_graph_, cq, threads);
    Await(&deregister_graph_, cq, threads);
    Await(&run_graph_, cq, threads);
    AwaitCallStreams(&run_graph_stream_, cq, threads);
    Await(&abort_step_, cq, threads);
    Await(&push_tensor_, cq, threads);
    AwaitCallStreams(&push_stream_, cq, threads);
    Await(&shutdown_, cq, threads);
  }

 private:
  template <typename Request, typename Response>
  using Method = UnaryMethod<Request, Response>;

  template <typename Request, typename Response>
  static void Await(const Method<Request, Response>* method,
                    grpc::ServerCompletionQueue* cq,
                    CompletionQueueThreads* threads) {
    ServerUnaryCall<Request, Response>::Await(method, cq, threads);
  }

  // Hands a method's calls to the worker, which answers through `finish`.
  template <typename Request, typename Response, typename RequestFn>
  void Forward(const char* name, Method<Request, Response>* method,
               RequestFn request_fn,
               void (Worker::*handler)(const Request*, Response*,
                                       StatusCallback)) {
    method->name = name;
    SetRequestFunction(method, &service_, request_fn);
    method->handle = [this, handler](const Request* request, Response* response,
                                     Finish finish) {
      (worker_->*handler)(request, response, Finisher(std::move(finish)));
    };
  }

  // The calls that come on data connections, served as over gRPC.
  DataListener::Handlers DataHandlers() {
    DataListener::Handlers handlers;
    // (Data connections do not say which peer they serve: their pushes
    // share one budget.)
    handlers.deliver = [this](int64_t step_id, const std::string& key,
                              Tensor value, StatusCallback done) {
      worker_->PushTensorFromPeerAsync(step_id, key, std::move(value),
                                       kDataConnectionPeer, std::move(done));
    };
    handlers.offer = [this](const proto::PushTensorHeader& header,
                            proto::PushTensorResponse* response,
                            StatusCallback done) {
      TakePushed(assembler_.AddOffer(header), kDataConnectionPeer, response,
                 std::move(done), /*over_grpc=*/false);
    };
    handlers.run_graph = [this](const proto::RunGraphRequest* request,
                                proto::RunGraphResponse* response,
                                StatusCallback done) {
      worker_->RunGraphAsync(request, response, std::move(done));
    };
    handlers.abandoned = [this](const proto::RunGraphRequest& request) {
      AbortAbandonedStep(request);
    };
    return handlers;
  }

  // A RunGraph that came over gRPC: its answer offers a data connection.
  void RunGraph(const proto::RunGraphRequest* request,
                proto::RunGraphResponse* response, StatusCallback done) {
    worker_->RunGraphAsync(
        request, response,
        [this, response, done = std::move(done)](const absl::Status& s) {
          if (s.ok()) Offer(response->mutable_data_connection());
          done(s);
        });
  }

  // Says where this task takes data connections (the listener is made on
  // the first call); leaves `offer` unset without one.
  void Offer(proto::DataConnectionOffer* offer) {
    if (data_listener_ == nullptr) return;
    if (const DataListener* listener = data_listener_->Get()) {
      offer->set_port(listener->port());
      offer->set_token(listener->token());
    }
  }

  // A RunGraph whose caller goes away (its master died, or cancelled the
  // call) aborts its step here, so that the step's ops waiting for tensors
  // from the dead task do not wait forever.
  void AbortAbandonedStep(const proto::RunGraphRequest& request) {
    auto abort = std::make_shared<proto::AbortStepRequest>();
    abort->set_step_id(request.step_id());
    abort->set_code(static_cast<int>(absl::StatusCode::kCancelled));
    abort->set_message(absl::StrCat("the master of step ", request.step_id(),
                                    " cancelled it or went away"));
    auto response = std::make_shared<proto::AbortStepResponse>();
    worker_->AbortStepAsync(abort.get(), response.get(),
                            [abort, response](const absl::Status&) {});
  }

  // Takes one PushTensor message (unary or on a stream); `done` gets its
  // status once `response` is set.
  void PushTensor(const grpc::ByteBuffer& request, const std::string& peer,
                  proto::PushTensorResponse* response, StatusCallback done) {
    TakePushed(assembler_.Add(request, peer), peer, response, std::move(done),
               /*over_grpc=*/true);
  }

  // Delivers what a push message (or a same-host offer on a data connection)
  // completed. The answer to one `over_grpc` offers a data connection.
  void TakePushed(absl::StatusOr<PushAssembler::Complete> pushed,
                  const std::string& peer, proto::PushTensorResponse* response,
                  StatusCallback done, bool over_grpc) {
    if (!pushed.ok()) {
      done(pushed.status());
    } else if (!pushed->same_host_refused.empty()) {
      response->set_same_host_refused(pushed->same_host_refused);
      done(absl::OkStatus());
    } else if (!pushed->value.IsInitialized()) {
      done(absl::OkStatus());  // more chunks to come
    } else {
      if (over_grpc) Offer(response->mutable_data_connection());
      // (Moved: this frame holds no reference while the consumers run.)
      worker_->PushTensorFromPeerAsync(pushed->step_id, pushed->key,
                                       std::move(pushed->value), peer,
                                       std::move(done));
    }
  }

  Worker* const worker_;
  PushAssembler assembler_;
  Service service_;
  Method<proto::GetStatusRequest, proto::GetStatusResponse> get_status_;
  Method<proto::RegisterGraphRequest, proto::RegisterGraphResponse>
      register_graph_;
  Method<proto::DeregisterGraphRequest, proto::DeregisterGraphResponse>
      deregister_graph_;
  Method<proto::RunGraphRequest, proto::RunGraphResponse> run_graph_;
  RunGraphStreamMethod run_graph_stream_;
  Method<proto::AbortStepRequest, proto::AbortStepResponse> abort_step_;
  Method<grpc::ByteBuffer, grpc::ByteBuffer> push_tensor_;
  PushStreamMethod push_stream_;
  Method<proto::ShutdownRequest, proto::ShutdownResponse> shutdown_;
  // Last: destroyed first, so its threads end before what they call.
  std::unique_ptr<LazyDataListener> data_listener_;
};

}  // namespace

std::unique_ptr<GrpcWorkerService> NewGrpcWorkerService(
    Worker* worker, WorkerServiceOptions options) {
  return std::make_unique<WorkerService>(worker, std::move(options));
}

}  // namespace distflow
