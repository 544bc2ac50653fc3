#include "distributed/rpc/grpc_master_service.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/tensor_coding.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/server_unary_call.h"
#include "proto/master.grpc.pb.h"

namespace distflow {
namespace {

using Service = proto::MasterService::AsyncService;
using Finish = std::function<void(const grpc::Status&)>;

template <typename Request, typename Response>
using Method = UnaryMethod<Request, Response>;

class GrpcMasterService : public AsyncService {
 public:
  GrpcMasterService(Master* master, ThreadPool* pool)
      : master_(master), pool_(pool) {
    Bind("CreateSession", &create_session_, &Service::RequestCreateSession,
         &GrpcMasterService::CreateSession);
    Bind("ExtendSession", &extend_session_, &Service::RequestExtendSession,
         &GrpcMasterService::ExtendSession);
    run_step_.name = "RunStep";
    SetRequestFunction(&run_step_, &service_, &Service::RequestRunStep);
    run_step_.handle_cancellable = [this](const proto::RunStepRequest* request,
                                          proto::RunStepResponse* response,
                                          Finish finish,
                                          CancellationManager* cancel) {
      RunStep(request, response, std::move(finish), cancel);
    };
    Bind("CloseSession", &close_session_, &Service::RequestCloseSession,
         &GrpcMasterService::CloseSession);
    Bind("KeepSession", &keep_session_, &Service::RequestKeepSession,
         &GrpcMasterService::KeepSession);
  }

  grpc::Service* service() override { return &service_; }

  void Start(grpc::ServerCompletionQueue* cq,
             CompletionQueueThreads* threads) override {
    Await(&create_session_, cq, threads);
    Await(&extend_session_, cq, threads);
    Await(&run_step_, cq, threads);
    Await(&close_session_, cq, threads);
    Await(&keep_session_, cq, threads);
  }

 private:
  void CreateSession(const proto::CreateSessionRequest* request,
                     proto::CreateSessionResponse* response, Finish finish) {
    Defer(std::move(finish), [this, request, response] {
      const absl::Duration timeout = master_->env().remote_session_timeout;
      const bool kept_alive =
          request->client_keeps_alive() && timeout > absl::ZeroDuration();
      auto handle = master_->CreateSession(request->graph(), kept_alive);
      if (handle.ok()) {
        response->set_session_handle(*handle);
        if (kept_alive) {
          // At least hourly, however long the timeout.
          response->set_keep_alive_ms(std::clamp<int64_t>(
              absl::ToInt64Milliseconds(timeout / 3), 1, 3'600'000));
        }
      }
      return handle.status();
    });
  }
  void ExtendSession(const proto::ExtendSessionRequest* request,
                     proto::ExtendSessionResponse* response, Finish finish) {
    Defer(std::move(finish), [this, request] {
      return master_->ExtendSession(request->session_handle(),
                                    request->graph());
    });
  }
  // A call that ends first (the client went away) cancels its step.
  void RunStep(const proto::RunStepRequest* request,
               proto::RunStepResponse* response, Finish finish,
               CancellationManager* cancel) {
    Defer(std::move(finish),
          [this, request, response, cancel]() -> absl::Status {
            if (request->feed_name_size() != request->feed_size()) {
              return absl::InvalidArgumentError(
                  "RunStep: feed names and values differ in number");
            }
            std::vector<std::pair<std::string, Tensor>> feeds;
            for (int i = 0; i < request->feed_size(); ++i) {
              auto value = TensorFromProto(request->feed(i));
              if (!value.ok()) {
                return absl::InvalidArgumentError(
                    absl::StrCat("feed '", request->feed_name(i),
                                 "': ", value.status().message()));
              }
              feeds.emplace_back(request->feed_name(i), std::move(*value));
            }
            std::vector<std::string> fetches(request->fetch().begin(),
                                             request->fetch().end());
            std::vector<std::string> targets(request->target().begin(),
                                             request->target().end());
            auto outputs = master_->RunStep(request->session_handle(), feeds,
                                            fetches, targets, cancel);
            if (!outputs.ok()) return outputs.status();
            for (const Tensor& t : *outputs)
              TensorToProto(t, response->add_fetch());
            return absl::OkStatus();
          });
  }
  void CloseSession(const proto::CloseSessionRequest* request,
                    proto::CloseSessionResponse* response, Finish finish) {
    Defer(std::move(finish), [this, request] {
      return master_->CloseSession(request->session_handle());
    });
  }

  void KeepSession(const proto::KeepSessionRequest* request,
                   proto::KeepSessionResponse* response, Finish finish) {
    // Answered on the polling thread: a map lookup, and a client whose
    // keep-alive waited behind long calls on the pool could lose its session.
    finish(ToGrpcStatus(master_->KeepSession(request->session_handle())));
  }

  // Answers with `work`'s status once it has run on the pool.
  // A `work` that throws fails its call: no exception crosses the RPC
  // boundary, nor ends the pool's thread.
  void Defer(Finish finish, std::function<absl::Status()> work) {
    pool_->Schedule([finish = std::move(finish), work = std::move(work)] {
      absl::Status s;
      try {
        s = work();
      } catch (const std::exception& e) {
        s = absl::InternalError(absl::StrCat(
            "a master call failed on the task that served it: ", e.what()));
      }
      finish(ToGrpcStatus(s));
    });
  }

  // Hands a method's calls to `handler`.
  template <typename Request, typename Response, typename RequestFn>
  void Bind(const char* name, Method<Request, Response>* method,
            RequestFn request_fn,
            void (GrpcMasterService::*handler)(const Request*, Response*,
                                               Finish)) {
    method->name = name;
    SetRequestFunction(method, &service_, request_fn);
    method->handle = [this, handler](const Request* request, Response* response,
                                     Finish finish) {
      (this->*handler)(request, response, std::move(finish));
    };
  }

  template <typename Request, typename Response>
  static void Await(const Method<Request, Response>* method,
                    grpc::ServerCompletionQueue* cq,
                    CompletionQueueThreads* threads) {
    ServerUnaryCall<Request, Response>::Await(method, cq, threads);
  }

  Master* const master_;
  ThreadPool* const pool_;
  Service service_;
  Method<proto::CreateSessionRequest, proto::CreateSessionResponse>
      create_session_;
  Method<proto::ExtendSessionRequest, proto::ExtendSessionResponse>
      extend_session_;
  Method<proto::RunStepRequest, proto::RunStepResponse> run_step_;
  Method<proto::CloseSessionRequest, proto::CloseSessionResponse>
      close_session_;
  Method<proto::KeepSessionRequest, proto::KeepSessionResponse> keep_session_;
};

}  // namespace

std::unique_ptr<AsyncService> NewGrpcMasterService(Master* master,
                                                   ThreadPool* pool) {
  return std::make_unique<GrpcMasterService>(master, pool);
}

}  // namespace distflow
