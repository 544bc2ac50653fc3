// MonitoredTrainingSession on an in-process cluster (real gRPC servers on
// 127.0.0.1): the chief initializes, the other workers wait for it and say
// what they wait for, nobody waits forever, and a session recovers when a ps
// task restarts.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "distflow/ops.h"
#include "distflow/replica_device_setter.h"
#include "distflow/train/global_step.h"
#include "distflow/train/hooks.h"
#include "distflow/train/monitored_session.h"
#include "distributed/rpc/test_cluster.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace train {
namespace {

using ::testing::HasSubstr;

// One worker's copy of the model (between-graph replication): the global step
// and a weight on the ps tasks, a step that adds 1 to both.
struct Replica {
  Replica(int ps_tasks, int worker) : root(Scope::NewRootScope()) {
    ReplicaDeviceSetterOptions placement;
    Scope s = root.WithDeviceFunction(ReplicaDeviceSetter(
        ps_tasks, "/job:worker/task:" + std::to_string(worker), placement));
    global_step = GetOrCreateGlobalStep(s);
    w = ops::Variable(s.WithOpName("w"), 100.0f);
    Output bump = ops::AssignAdd(s.WithOpName("bump"), w, 1.0f);
    tick = ops::AssignAdd(s.WithOpName("tick"), global_step, int64_t{1});
    train = ops::Identity(s.WithOpName("train"), bump);
  }
  Scope root;
  ops::Variable global_step, w;
  Output tick, train;
};

MonitoredTrainingSession::Options OptionsFor(TestCluster* cluster, int worker) {
  MonitoredTrainingSession::Options options;
  options.master = cluster->server("worker", worker)->target();
  options.is_chief = worker == 0;
  options.log_step_count_steps = 0;
  options.max_wait_secs = 30;
  return options;
}

TEST(MonitoredSessionClusterTest, WorkerWaitsForTheChiefAndSaysForWhat) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 2}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Replica chief(1, 0), worker(1, 1);
  testing::internal::CaptureStderr();
  absl::StatusOr<std::unique_ptr<MonitoredTrainingSession>> waiting;
  std::atomic<bool> ready{false};
  std::thread waiter([&] {
    waiting = MonitoredTrainingSession::Create(worker.root,
                                               OptionsFor(cluster->get(), 1));
    ready = true;
  });
  // The worker keeps waiting while there is no chief.
  absl::SleepFor(absl::Seconds(1));
  EXPECT_FALSE(ready);
  auto session = MonitoredTrainingSession::Create(
      chief.root, OptionsFor(cluster->get(), 0));
  waiter.join();
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE(waiting.ok()) << waiting.status();
  EXPECT_THAT(log, HasSubstr("waiting for the chief to initialize or restore "
                             "the model: 2 variables are not initialized "
                             "(global_step, w)"));
  // Both see the one model the chief initialized, and share it.
  auto out = (*waiting)->Run({worker.train});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 101.0f);
  out = (*session)->Run({chief.train});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 102.0f);
}

TEST(MonitoredSessionClusterTest, WorkerGivesUpAfterMaxWaitNamingVariables) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 2}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Replica worker(1, 1);
  auto options = OptionsFor(cluster->get(), 1);
  options.max_wait_secs = 1;
  const absl::Time start = absl::Now();
  auto session = MonitoredTrainingSession::Create(worker.root, options);
  const absl::Duration took = absl::Now() - start;
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), absl::StatusCode::kDeadlineExceeded)
      << session.status();
  EXPECT_THAT(session.status().message(), HasSubstr("global_step, w"));
  EXPECT_THAT(session.status().message(), HasSubstr("max_wait_secs"));
  EXPECT_THAT(session.status().message(), HasSubstr("chief"));
  EXPECT_GE(took, absl::Milliseconds(700));
  EXPECT_LT(took, absl::Seconds(10));
}

TEST(MonitoredSessionClusterTest, ChiefGivesUpOnADeadPsNamingItsAddress) {
  auto cluster = TestCluster::Create({{"ps", 2}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Replica chief(2, 0);
  const std::string ps1 = (*cluster)->address("ps", 1);
  (*cluster)->Kill("ps", 1);
  auto options = OptionsFor(cluster->get(), 0);
  options.max_wait_secs = 1;
  auto session = MonitoredTrainingSession::Create(chief.root, options);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), absl::StatusCode::kDeadlineExceeded)
      << session.status();
  EXPECT_THAT(session.status().message(), HasSubstr(ps1));
}

TEST(MonitoredSessionClusterTest, ChiefWaitsForAPsThatStartsLate) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Replica chief(1, 0);
  (*cluster)->Kill("ps", 0);
  std::thread late_start([&] {
    absl::SleepFor(absl::Milliseconds(700));
    ASSERT_TRUE((*cluster)->Restart("ps", 0).ok());
  });
  testing::internal::CaptureStderr();
  auto session = MonitoredTrainingSession::Create(
      chief.root, OptionsFor(cluster->get(), 0));
  late_start.join();
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_THAT(log, HasSubstr("waiting for a task to answer"));
  EXPECT_THAT(log, HasSubstr((*cluster)->address("ps", 0)));
  auto out = (*session)->Run({chief.train});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 101.0f);
}

// Without checkpoints the chief initializes the restarted ps again, and the
// loop still runs to its last step.
TEST(MonitoredSessionClusterTest, RecoversWhenAPsRestarts) {
  auto cluster = TestCluster::Create({{"ps", 2}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Replica chief(2, 0);
  auto options = OptionsFor(cluster->get(), 0);
  options.hooks.push_back(StopAtStepHook::Create(10));
  auto session = MonitoredTrainingSession::Create(chief.root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  int steps = 0;
  while (!(*session)->ShouldStop()) {
    if (steps == 4) {
      ASSERT_TRUE((*cluster)->Restart("ps", 0).ok());
    }
    auto out = (*session)->Run({chief.tick});
    ASSERT_TRUE(out.ok()) << out.status();
    ++steps;
  }
  EXPECT_EQ((*session)->num_recoveries(), 1);
  // global_step lives on ps 0 (the first variable): it started over.
  EXPECT_EQ(steps, 14);
}

}  // namespace
}  // namespace train
}  // namespace distflow
