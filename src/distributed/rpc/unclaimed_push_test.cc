// Tensors pushed to a task for a step that never runs there (its master
// failed or died before sending that task its RunGraph, and no abort came)
// are dropped after the step deadline instead of being kept forever; a late
// RunGraph of that step fails at once with an error that says so.
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "distflow/distflow.h"
#include "distributed/rpc/grpc_remote_worker.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/test_cluster.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

constexpr char kWorkerDevice[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr char kPsDevice[] = "/job:ps/replica:0/task:0/device:CPU:0";
constexpr char kEdge[] = "x:0";

std::string Key() {
  return absl::StrCat(kWorkerDevice, ";", kPsDevice, ";", kEdge);
}

// A ps partition that receives the worker's "x:0" (as the partitioner
// builds it) and computes from it.
proto::GraphDef RecvPartition() {
  proto::GraphDef graph;
  proto::NodeDef* recv = graph.add_node();
  recv->set_name("recv_x");
  recv->set_op("_Recv");
  auto& attr = *recv->mutable_attr();
  attr["tensor_type"].set_type(proto::DT_FLOAT);
  attr["tensor_name"].set_s(kEdge);
  attr["send_device"].set_s(kWorkerDevice);
  attr["recv_device"].set_s(kPsDevice);
  attr["shape"].mutable_shape()->add_dim(1 << 20);
  proto::NodeDef* use = graph.add_node();
  use->set_name("use_x");
  use->set_op("Identity");
  use->add_input("recv_x");
  (*use->mutable_attr())["T"].set_type(proto::DT_FLOAT);
  return graph;
}

class UnclaimedPushTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    // Pushed tensors of a step that never runs go after twice this: long
    // enough that a loaded machine checks them, or runs their step, first.
    options.step_timeout_ms = 1500;
    auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}}, options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(*cluster);
    ps_ = cluster_->server("ps", 0)->worker();
    // A RunGraph that waited for a dropped tensor would fail by this
    // deadline instead of hanging the test.
    RpcDeadlines deadlines;
    deadlines.step_ms = 10'000;
    to_ps_ = NewGrpcRemoteWorker(NewChannel(cluster_->address("ps", 0)),
                                 "/job:ps/replica:0/task:0",
                                 cluster_->address("ps", 0), deadlines);
  }

  // Registers RecvPartition on the ps and fills `run` with what a RunGraph
  // of it names (its handle and the ps's incarnation).
  absl::Status RegisterRecvPartition(proto::RunGraphRequest* run) {
    proto::RegisterGraphRequest reg;
    *reg.mutable_graph() = RecvPartition();
    proto::RegisterGraphResponse registered;
    absl::Status s = CallAndWait([&](StatusCallback done) {
      to_ps_->RegisterGraphAsync(&reg, &registered, std::move(done));
    });
    run->set_graph_handle(registered.graph_handle());
    run->set_incarnation(registered.incarnation());
    return s;
  }

  // Pushes a 4 MiB tensor to the ps for `step_id`, as the worker's _Send
  // does.
  absl::Status Push(int64_t step_id) {
    Tensor value(DataType::kFloat, TensorShape({1 << 20}));
    return CallAndWait([&](StatusCallback done) {
      to_ps_->PushTensorAsync(step_id, Key(), value, std::move(done));
    });
  }

  // Polls until the ps holds no unclaimed step, for at most `limit`.
  bool WaitForNoUnclaimed(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (ps_->NumUnclaimedSteps() > 0) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

  std::unique_ptr<TestCluster> cluster_;
  Worker* ps_ = nullptr;
  std::unique_ptr<WorkerInterface> to_ps_;
};

TEST_F(UnclaimedPushTest, TensorsOfAStepThatNeverRunsAreDropped) {
  constexpr int64_t kStep = 4242;
  const auto pushing = std::chrono::steady_clock::now();
  ASSERT_TRUE(Push(kStep).ok());
  EXPECT_EQ(ps_->NumUnclaimedSteps(), 1);
  EXPECT_EQ(ps_->UnclaimedPushedBytes(), 4 << 20);

  // The step deadline (1.5 s) and the slack (as much again) pass.
  ASSERT_TRUE(WaitForNoUnclaimed(std::chrono::seconds(15)));
  EXPECT_GE(std::chrono::steady_clock::now() - pushing,
            std::chrono::milliseconds(2950));
  EXPECT_EQ(ps_->UnclaimedPushedBytes(), 0);

  // The step's RunGraph, come too late, fails at once naming the step and
  // the sender, instead of waiting for the dropped tensor.
  proto::RunGraphRequest run;
  ASSERT_TRUE(RegisterRecvPartition(&run).ok());
  run.set_step_id(kStep);
  proto::RunGraphResponse response;
  absl::Status late = CallAndWait([&](StatusCallback done) {
    to_ps_->RunGraphAsync(&run, &response, std::move(done));
  });
  EXPECT_TRUE(absl::IsAborted(late)) << late;
  EXPECT_THAT(late.message(), HasSubstr("step 4242 was dropped"));
  EXPECT_THAT(late.message(), HasSubstr("/job:worker/replica:0/task:0"));
  EXPECT_THAT(late.message(), HasSubstr("no RunGraph"));
  // So does a late push for it.
  absl::Status late_push = Push(kStep);
  EXPECT_THAT(late_push.message(), HasSubstr("step 4242 was dropped"));
  EXPECT_EQ(ps_->NumUnclaimedSteps(), 0);

  // A step whose tensor is pushed before its RunGraph still runs.
  ASSERT_TRUE(Push(kStep + 1).ok());
  run.set_step_id(kStep + 1);
  response.Clear();
  absl::Status on_time = CallAndWait([&](StatusCallback done) {
    to_ps_->RunGraphAsync(&run, &response, std::move(done));
  });
  EXPECT_TRUE(on_time.ok()) << on_time;
  EXPECT_EQ(ps_->NumUnclaimedSteps(), 0);
}

// A step that started here (its RunGraph came) keeps what is pushed for it,
// however long it runs: a partition that waits longer than the timeout for
// its tensor still gets it.
TEST_F(UnclaimedPushTest, ARunningStepKeepsItsTensors) {
  constexpr int64_t kStep = 777;
  proto::RunGraphRequest run;
  ASSERT_TRUE(RegisterRecvPartition(&run).ok());
  run.set_step_id(kStep);
  proto::RunGraphResponse response;
  absl::Notification ran;
  absl::Status status;
  to_ps_->RunGraphAsync(&run, &response, [&](const absl::Status& s) {
    status = s;
    ran.Notify();
  });
  // The RunGraph reaches the ps (its step is under way there), and then the
  // step waits longer than the timeout for its tensor.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (ps_->IdleFor(absl::ZeroDuration()) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_FALSE(ps_->IdleFor(absl::ZeroDuration()))
      << "RunGraph of step " << kStep << " did not reach the ps";
  std::this_thread::sleep_for(std::chrono::milliseconds(3200));
  EXPECT_FALSE(ran.HasBeenNotified());
  ASSERT_TRUE(Push(kStep).ok());
  ASSERT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(status.ok()) << status;
}

// However long the step deadline, unclaimed tensors go after
// pending_push_timeout_ms (they were kept for the step deadline and a
// minute: 61 minutes by default), and their bytes stop counting against
// the peer that pushed them.
TEST(UnclaimedPushTimeoutTest, TensorsGoAfterThePendingPushTimeout) {
  ServerOptions options;
  options.pending_push_timeout_ms = 300;
  auto cluster = TestCluster::Create({{"ps", 1}}, options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Worker* ps = (*cluster)->server("ps", 0)->worker();
  auto to_ps = NewGrpcRemoteWorker(NewChannel((*cluster)->address("ps", 0)),
                                   "/job:ps/replica:0/task:0",
                                   (*cluster)->address("ps", 0));
  Tensor value(DataType::kFloat, TensorShape({1024}));
  ASSERT_TRUE(CallAndWait([&](StatusCallback done) {
                to_ps->PushTensorAsync(31, Key(), value, std::move(done));
              }).ok());
  EXPECT_EQ(ps->NumUnclaimedSteps(), 1);
  EXPECT_EQ(ps->push_budget()->Held(), 4096);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (ps->NumUnclaimedSteps() > 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(ps->NumUnclaimedSteps(), 0);
  EXPECT_EQ(ps->push_budget()->Held(), 0);
}

}  // namespace
}  // namespace distflow
