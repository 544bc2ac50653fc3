#include "distributed/rpc/grpc_master_service.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/tensor_coding.h"
#include "distributed/rpc/grpc_util.h"
#include "proto/master.grpc.pb.h"

namespace distflow {
namespace {

class GrpcMasterService : public proto::MasterService::CallbackService {
 public:
  GrpcMasterService(Master* master, ThreadPool* pool)
      : master_(master), pool_(pool) {}

  grpc::ServerUnaryReactor* CreateSession(
      grpc::CallbackServerContext* ctx,
      const proto::CreateSessionRequest* request,
      proto::CreateSessionResponse* response) override {
    return Defer(ctx, [this, request, response] {
      auto handle = master_->CreateSession(request->graph());
      if (handle.ok()) response->set_session_handle(*handle);
      return handle.status();
    });
  }
  grpc::ServerUnaryReactor* ExtendSession(
      grpc::CallbackServerContext* ctx,
      const proto::ExtendSessionRequest* request,
      proto::ExtendSessionResponse* response) override {
    return Defer(ctx, [this, request] {
      return master_->ExtendSession(request->session_handle(),
                                    request->graph());
    });
  }
  grpc::ServerUnaryReactor* RunStep(grpc::CallbackServerContext* ctx,
                                    const proto::RunStepRequest* request,
                                    proto::RunStepResponse* response) override {
    return Defer(ctx, [this, request, response]() -> absl::Status {
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
      auto outputs =
          master_->RunStep(request->session_handle(), feeds, fetches, targets);
      if (!outputs.ok()) return outputs.status();
      for (const Tensor& t : *outputs) TensorToProto(t, response->add_fetch());
      return absl::OkStatus();
    });
  }
  grpc::ServerUnaryReactor* CloseSession(
      grpc::CallbackServerContext* ctx,
      const proto::CloseSessionRequest* request,
      proto::CloseSessionResponse* response) override {
    return Defer(ctx, [this, request] {
      return master_->CloseSession(request->session_handle());
    });
  }

 private:
  grpc::ServerUnaryReactor* Defer(grpc::CallbackServerContext* ctx,
                                  std::function<absl::Status()> work) {
    auto* reactor = ctx->DefaultReactor();
    pool_->Schedule([reactor, work = std::move(work)] {
      reactor->Finish(ToGrpcStatus(work()));
    });
    return reactor;
  }

  Master* const master_;
  ThreadPool* const pool_;
};

}  // namespace

std::unique_ptr<grpc::Service> NewGrpcMasterService(Master* master,
                                                    ThreadPool* pool) {
  return std::make_unique<GrpcMasterService>(master, pool);
}

}  // namespace distflow
