// No exception crosses the RPC boundary: a handler that throws fails its call
// with INTERNAL naming the method, and the task goes on serving.
#include <chrono>
#include <memory>
#include <stdexcept>
#include <vector>

#include "absl/strings/str_cat.h"
#include "distributed/rpc/completion_queue_threads.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/server_unary_call.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/worker.grpc.pb.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

TEST(RpcBoundaryTest, AThrowingHandlerFailsItsCallNotTheTask) {
  using Service = proto::WorkerService::AsyncService;
  Service service;
  UnaryMethod<proto::RunGraphRequest, proto::RunGraphResponse> run_graph;
  run_graph.name = "RunGraph";
  SetRequestFunction(&run_graph, &service, &Service::RequestRunGraph);
  run_graph.handle = [](const proto::RunGraphRequest* request,
                        proto::RunGraphResponse*,
                        std::function<void(const grpc::Status&)> finish) {
    // What a negative count from the network did in a std::vector.
    std::vector<int> fetches(
        request->num_fetches() < 0 ? static_cast<size_t>(-1) / 2 : 0);
    finish(grpc::Status::OK);
  };
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  auto cq = builder.AddCompletionQueue();
  auto server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto threads =
      std::make_unique<CompletionQueueThreads>("boundary", cq.get(), 1);
  ServerUnaryCall<proto::RunGraphRequest, proto::RunGraphResponse>::Await(
      &run_graph, cq.get(), threads.get());

  auto stub = proto::WorkerService::NewStub(
      NewChannel(absl::StrCat("127.0.0.1:", port)));
  for (int n : {-1, 0, -1}) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(20));
    proto::RunGraphRequest request;
    request.set_num_fetches(n);
    proto::RunGraphResponse response;
    grpc::Status s = stub->RunGraph(&ctx, request, &response);
    if (n < 0) {
      EXPECT_EQ(s.error_code(), grpc::StatusCode::INTERNAL)
          << s.error_message();
      EXPECT_THAT(s.error_message(), HasSubstr("RunGraph"));
    } else {
      EXPECT_TRUE(s.ok()) << s.error_message();
    }
  }
  threads->Close();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  threads->Shutdown();
}

}  // namespace
}  // namespace distflow
