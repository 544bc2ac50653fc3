// Summaries (string tensors) computed on other tasks reach the client: by
// PushTensor between tasks, and as TensorProto through the master service.
#include <string>

#include "core/tensor_coding.h"
#include "distflow/distflow.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/test_cluster.h"
#include "gtest/gtest.h"
#include "proto/master.grpc.pb.h"
#include "proto/summary.pb.h"

namespace distflow {
namespace {

proto::Summary Parse(const Tensor& t) {
  proto::Summary summary;
  EXPECT_EQ(t.dtype(), DataType::kString);
  EXPECT_TRUE(summary.ParseFromString(t.scalar<std::string>()));
  return summary;
}

// A summary made on the ps task, merged on the worker with one of its own.
struct SummaryGraph {
  Scope root = Scope::NewRootScope();
  Output on_ps, merged;
  Operation init;
  SummaryGraph() {
    Scope ps = root.WithDevice("/job:ps/task:0");
    ops::Variable w(ps.WithOpName("w"), Tensor::Vector<float>({1, 2, 3}));
    on_ps = ops::ScalarSummary(ps.WithOpName("w_summary"), "w/mean",
                               ops::Mean(ps, w, 0));
    Scope worker = root.WithDevice("/job:worker/task:0");
    merged = ops::MergeSummary(
        worker.WithOpName("merged"),
        {on_ps, ops::ScalarSummary(worker, "step_time", 0.5f)});
    init = ops::GlobalVariablesInitializer(root);
  }
};

TEST(SummaryFetchTest, SummariesCrossTasksToAGrpcSession) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  SummaryGraph g;
  SessionOptions options;
  options.target = (*cluster)->server("worker", 0)->target();
  auto session = ClientSession::Create(g.root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_EQ((*session)->RunTargets({g.init}), absl::OkStatus());
  auto out = (*session)->Run({g.on_ps, g.merged});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Parse((*out)[0]).value(0).tag(), "w/mean");
  EXPECT_EQ(Parse((*out)[0]).value(0).simple_value(), 2.0f);
  proto::Summary merged = Parse((*out)[1]);
  ASSERT_EQ(merged.value_size(), 2);
  EXPECT_EQ(merged.value(0).tag(), "w/mean");
  EXPECT_EQ(merged.value(1).tag(), "step_time");
}

// A client in another process talks to the master over gRPC, where fetched
// values travel as TensorProto.
TEST(SummaryFetchTest, SummariesTravelAsTensorProtoFromTheMaster) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  SummaryGraph g;
  proto::CreateSessionRequest create;
  ASSERT_TRUE(g.root.ToGraphDef(create.mutable_graph()).ok());
  auto master = proto::MasterService::NewStub(
      NewChannel((*cluster)->address("worker", 0)));
  auto call = [](auto method) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(30));
    return method(&ctx);
  };
  proto::CreateSessionResponse created;
  ASSERT_TRUE(call([&](grpc::ClientContext* ctx) {
                return master->CreateSession(ctx, create, &created);
              }).ok());
  proto::RunStepRequest init;
  init.set_session_handle(created.session_handle());
  init.add_target(g.init.name());
  proto::RunStepResponse ignored;
  ASSERT_TRUE(call([&](grpc::ClientContext* ctx) {
                return master->RunStep(ctx, init, &ignored);
              }).ok());
  proto::RunStepRequest run;
  run.set_session_handle(created.session_handle());
  run.add_fetch(g.merged.name());
  proto::RunStepResponse response;
  grpc::Status status = call([&](grpc::ClientContext* ctx) {
    return master->RunStep(ctx, run, &response);
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.fetch_size(), 1);
  auto merged = TensorFromProto(response.fetch(0));
  ASSERT_TRUE(merged.ok()) << merged.status();
  proto::Summary summary = Parse(*merged);
  ASSERT_EQ(summary.value_size(), 2);
  EXPECT_EQ(summary.value(0).simple_value(), 2.0f);
  EXPECT_EQ(summary.value(1).simple_value(), 0.5f);
}

}  // namespace
}  // namespace distflow
