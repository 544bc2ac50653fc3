// MonitoredTrainingSession on an in-process cluster (real gRPC servers on
// 127.0.0.1): the chief initializes, the other workers wait for it and say
// what they wait for, nobody waits forever, and a session recovers when a ps
// task restarts.
#include <stdlib.h>

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
#include "distflow/train/optimizers.h"
#include "distflow/train/saver.h"
#include "distflow/train/sync_replicas_optimizer.h"
#include "distributed/rpc/test_cluster.h"
#include "distributed/worker.h"
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
  // The worker keeps waiting while there is no chief; its first check has
  // registered the readiness graph on the ps (however slow the machine).
  absl::SleepFor(absl::Seconds(1));
  Worker* ps = (*cluster)->server("ps", 0)->worker();
  for (int i = 0; i < 300 && ps->NumGraphs() == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(50));
  }
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
    // Long after the chief's first try, even on a loaded machine.
    absl::SleepFor(absl::Seconds(2));
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

// Synchronous training (SyncReplicasOptimizer, whose hook runs the chief's
// aggregation loop on a thread of its own over the session): a ps restart
// makes the session be created again, and the loop must stop using the old
// session before it goes (the hook's BeforeCloseSession), then start over on
// the new one, and training reaches its last step.
TEST(MonitoredSessionClusterTest, SynchronousTrainingRecoversWhenAPsRestarts) {
  auto cluster = TestCluster::Create({{"ps", 2}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Scope root = Scope::NewRootScope();
  Scope s = root.WithDeviceFunction(ReplicaDeviceSetter(
      2, "/job:worker/task:0", ReplicaDeviceSetterOptions()));
  ops::Variable global_step = GetOrCreateGlobalStep(s);
  ops::Variable w(s.WithOpName("w"), 1.0f);
  Output loss = ops::Square(s.WithOpName("loss"), w);
  GradientDescentOptimizer sgd(0.1f);
  SyncReplicasOptimizer sync(&sgd, /*replicas_to_aggregate=*/1);
  auto train = sync.Minimize(s, loss, global_step);
  ASSERT_TRUE(train.ok()) << train.status();
  Output step_after = ops::AssignAdd(
      s.WithOpName("step_after").WithControlDependencies({*train}), global_step,
      int64_t{0});
  auto options = OptionsFor(cluster->get(), 0);
  options.hooks.push_back(StopAtStepHook::Create(12));
  options.hooks.push_back(sync.MakeSessionRunHook(/*is_chief=*/true));
  auto session = MonitoredTrainingSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  int steps = 0;
  while (!(*session)->ShouldStop()) {
    if (steps == 4) {
      ASSERT_TRUE((*cluster)->Restart("ps", 0).ok());
    }
    auto out = (*session)->Run({step_after});
    ASSERT_TRUE(out.ok()) << out.status();
    ++steps;
  }
  ASSERT_TRUE((*session)->Close().ok());
  EXPECT_EQ((*session)->num_recoveries(), 1);
  // The global step (on ps 0) started over after the restart.
  EXPECT_GE(steps, 12);
}

// Between-graph training on two workers sharing a global step: a ps restart
// makes both recover (the chief initializes again, the worker waits for it),
// and both reach the last step.
TEST(MonitoredSessionClusterTest, BothWorkersRecoverWhenAPsRestarts) {
  auto cluster = TestCluster::Create({{"ps", 2}, {"worker", 2}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Replica replicas[] = {Replica(2, 0), Replica(2, 1)};
  std::unique_ptr<MonitoredTrainingSession> sessions[2];
  for (int i = 0; i < 2; ++i) {
    auto options = OptionsFor(cluster->get(), i);
    options.hooks.push_back(StopAtStepHook::Create(40));
    auto session = MonitoredTrainingSession::Create(replicas[i].root, options);
    ASSERT_TRUE(session.ok()) << session.status();
    sessions[i] = std::move(*session);
  }
  std::atomic<int> steps[2] = {0, 0};
  absl::Status errors[2];
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      while (!sessions[i]->ShouldStop()) {
        absl::Status s = sessions[i]->RunTargets({replicas[i].tick.op()});
        if (!s.ok()) {
          errors[i] = s;
          return;
        }
        ++steps[i];
        absl::SleepFor(absl::Milliseconds(5));
      }
    });
  }
  while (steps[0] + steps[1] < 10) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_TRUE((*cluster)->Restart("ps", 0).ok());
  for (auto& t : threads) t.join();
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(errors[i].ok()) << "worker " << i << ": " << errors[i];
    EXPECT_GE(sessions[i]->num_recoveries(), 1) << "worker " << i;
    EXPECT_TRUE(sessions[i]->ShouldStop());
  }
  // The global step started over on the restarted ps: more than 40 steps.
  EXPECT_GT(steps[0] + steps[1], 40);
}

// The chief's task dies and comes back: meanwhile the other worker keeps
// training; the new chief finds the variables alive on the ps and keeps them.
TEST(MonitoredSessionClusterTest, WorkerKeepsTrainingWhileTheChiefRestarts) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 2}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto chief_replica = std::make_unique<Replica>(1, 0);
  Replica worker(1, 1);
  auto chief = MonitoredTrainingSession::Create(chief_replica->root,
                                                OptionsFor(cluster->get(), 0));
  ASSERT_TRUE(chief.ok()) << chief.status();
  auto session = MonitoredTrainingSession::Create(
      worker.root, OptionsFor(cluster->get(), 1));
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*chief)->Run({chief_replica->train}).ok());

  std::atomic<int> worker_steps{0};
  std::atomic<bool> done{false};
  absl::Status worker_error;
  std::thread training([&] {
    while (!done) {
      absl::Status s = (*session)->RunTargets({worker.train.op()});
      if (!s.ok()) {
        worker_error = s;
        return;
      }
      ++worker_steps;
    }
  });
  (*cluster)->Kill("worker", 0);
  chief->reset();  // its process is gone
  // The worker's next step completes without the chief (within 10 s: a
  // bound for a failure only, as steps are slow on a loaded machine).
  const int before = worker_steps;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (worker_steps <= before && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_GT(worker_steps, before) << "the worker is stuck without its chief";

  ASSERT_TRUE((*cluster)->Restart("worker", 0).ok());
  chief_replica = std::make_unique<Replica>(1, 0);
  chief = MonitoredTrainingSession::Create(chief_replica->root,
                                           OptionsFor(cluster->get(), 0));
  ASSERT_TRUE(chief.ok()) << chief.status();
  done = true;
  training.join();
  EXPECT_TRUE(worker_error.ok()) << worker_error;
  auto out = (*chief)->Run({chief_replica->train});
  ASSERT_TRUE(out.ok()) << out.status();
  // Every step of both so far is in w: nothing was initialized again.
  EXPECT_EQ((*out)[0].scalar<float>(), 100.0f + 2 + worker_steps);
}

// With checkpoints, a restarted ps costs at most the steps since the last
// one: the chief restores it and training goes on from there.
TEST(MonitoredSessionClusterTest,
     RecoversFromTheLastCheckpointWhenAPsRestarts) {
  auto cluster = TestCluster::Create({{"ps", 2}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  std::string dir = ::testing::TempDir() + "mts_cluster_XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  Replica chief(2, 0);
  auto options = OptionsFor(cluster->get(), 0);
  options.checkpoint_dir = dir;
  options.save_checkpoint_steps = 3;
  options.hooks.push_back(StopAtStepHook::Create(12));
  auto session = MonitoredTrainingSession::Create(chief.root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  int steps = 0;
  float w = 0;
  while (!(*session)->ShouldStop()) {
    if (steps == 7) {
      // Checkpoints were saved at global steps 3 and 6.
      ASSERT_TRUE((*cluster)->Restart("ps", 0).ok());
    }
    auto out = (*session)->Run({chief.tick, chief.train});
    ASSERT_TRUE(out.ok()) << out.status();
    w = (*out)[1].scalar<float>();
    ++steps;
  }
  EXPECT_EQ((*session)->num_recoveries(), 1);
  // Step 7 is done again after the restore of step 6: 13 steps in all, and w
  // (on the ps that did not restart, restored too) counts 12 of them.
  EXPECT_EQ(steps, 13);
  EXPECT_EQ(w, 112.0f);
}

// Restarts a ps task (losing its variables) right after the step that asks
// to stop, before the chief's final checkpoint: the window between the last
// step and the end of training.
class RestartPsWhenStopping : public SessionRunHook {
 public:
  explicit RestartPsWhenStopping(TestCluster* cluster) : cluster_(cluster) {}
  absl::Status AfterRun(SessionRunContext* context,
                        const SessionRunValues& values) override {
    if (!context->stop_requested() || restarted_) return absl::OkStatus();
    restarted_ = true;
    return cluster_->Restart("ps", 0);
  }

 private:
  TestCluster* cluster_;
  bool restarted_ = false;
};

TEST(MonitoredSessionClusterTest, APsRestartBeforeTheFinalCheckpointIsRedone) {
  auto cluster = TestCluster::Create({{"ps", 2}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  std::string dir = ::testing::TempDir() + "mts_final_XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  Replica chief(2, 0);
  auto options = OptionsFor(cluster->get(), 0);
  options.checkpoint_dir = dir;
  options.save_checkpoint_steps = 5;
  // After the stop hook, so that it sees the stop asked for.
  options.hooks.push_back(StopAtStepHook::Create(12));
  options.hooks.push_back(
      std::make_shared<RestartPsWhenStopping>(cluster->get()));
  auto session = MonitoredTrainingSession::Create(chief.root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  int runs = 0;
  float w = 0;
  while (!(*session)->ShouldStop()) {
    auto out = (*session)->Run({chief.tick, chief.train});
    ASSERT_TRUE(out.ok()) << out.status();
    w = (*out)[1].scalar<float>();
    ++runs;
  }
  // Global step 12 asked to stop; its final checkpoint found ps 0 restarted,
  // so the session restored the checkpoint of step 10 and ran steps 11 and
  // 12 again (the twelfth call ran step 11 again; a thirteenth ran 12).
  EXPECT_EQ((*session)->num_recoveries(), 1);
  EXPECT_EQ(runs, 13);
  EXPECT_EQ(w, 112.0f);
  ASSERT_TRUE((*session)->Close().ok());
  auto latest = LatestCheckpoint(dir);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_THAT(*latest, HasSubstr("-12"));
}

}  // namespace
}  // namespace train
}  // namespace distflow
