// The sessions of clients in other processes: one that idles between steps
// keeps its session alive over gRPC, and a session with a step running does
// not expire even when its client says nothing else, on the master of a
// task with a short ServerOptions::remote_session_timeout_ms.
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "distflow/distflow.h"
#include "distributed/master.h"
#include "distributed/rpc/test_cluster.h"
#include "distributed/worker.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

TEST(SessionKeepAliveTest, IdleRemoteClientKeepsItsSessionUntilItCloses) {
  ServerOptions options;
  // Keep-alives every 2 s: a loaded machine may delay one, not three.
  options.remote_session_timeout_ms = 6000;
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}}, options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  GrpcServer* worker = (*cluster)->server("worker", 0);
  Scope root = Scope::NewRootScope();
  ops::Variable v(root.WithDevice("/job:ps/task:0").WithOpName("v"),
                  Tensor::Scalar<float>(3));
  Output doubled = ops::Add(root.WithOpName("doubled"), v, v);
  auto session = ClientSession::Create(root, RemoteSessionTarget(worker));
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_EQ((*session)->RunTargets({ops::GlobalVariablesInitializer(root)}),
            absl::OkStatus());

  absl::SleepFor(absl::Seconds(7));  // idle past the timeout
  auto out = (*session)->Run({doubled});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 6.0f);
  EXPECT_EQ(worker->master()->NumSessions(), 1);
  EXPECT_GT((*cluster)->server("ps", 0)->worker()->NumGraphs(), 0);

  ASSERT_EQ((*session)->Close(), absl::OkStatus());
  EXPECT_EQ(worker->master()->NumSessions(), 0);
  EXPECT_EQ((*cluster)->server("ps", 0)->worker()->NumGraphs(), 0);
}

TEST(SessionKeepAliveTest, SessionWithAStepRunningDoesNotExpire) {
  ServerOptions options;
  options.remote_session_timeout_ms = 4000;
  auto cluster = TestCluster::Create({{"worker", 1}}, options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Master* master = (*cluster)->server("worker", 0)->master();
  Scope root = Scope::NewRootScope();
  Output queue = ops::FIFOQueue(root.WithOpName("queue"), DataType::kFloat,
                                PartialTensorShape({}));
  ops::QueueDequeue(root.WithOpName("take"), queue);
  ops::QueueEnqueue(root.WithOpName("put"), queue, ops::Const(root, 7.0f));
  proto::GraphDef graph;
  ASSERT_EQ(root.ToGraphDef(&graph), absl::OkStatus());
  // Called as the RPC service calls it for a client that keeps its session
  // alive; this one never does.
  auto handle = master->CreateSession(graph, /*kept_alive=*/true);
  ASSERT_TRUE(handle.ok()) << handle.status();

  absl::StatusOr<std::vector<Tensor>> taken;
  std::thread step([&] { taken = master->RunStep(*handle, {}, {"take:0"}, {}); });
  absl::SleepFor(absl::Seconds(5));  // the step waits on the queue
  EXPECT_EQ(master->NumSessions(), 1);
  // (Were the session gone, the waiting step would never end, and the test
  // would fail by its time limit.)
  EXPECT_TRUE(master->RunStep(*handle, {}, {}, {"put"}).ok());
  step.join();
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_EQ((*taken)[0].scalar<float>(), 7.0f);

  // Once nothing runs and nothing is said, it goes.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (master->NumSessions() > 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(master->NumSessions(), 0);
}

}  // namespace
}  // namespace distflow
