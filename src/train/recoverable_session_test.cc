// RecoverableSession on an in-process cluster (real gRPC servers on
// 127.0.0.1): a side step after a ps restart runs on a new session once the
// chief has restored the model, where a plain session's step fails; and a ps
// that stays down ends the wait with an error naming it.
#include "distflow/train/recoverable_session.h"

#include <stdlib.h>

#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "distflow/ops.h"
#include "distflow/replica_device_setter.h"
#include "distflow/train/global_step.h"
#include "distflow/train/hooks.h"
#include "distflow/train/monitored_session.h"
#include "distflow/train/saver.h"
#include "distributed/rpc/test_cluster.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace train {
namespace {

using ::testing::HasSubstr;

// A chief's model on the ps task: the global step and a weight that each
// training step adds 1 to; one saver and ready op for both sessions.
struct Chief {
  explicit Chief(TestCluster* cluster) : root(Scope::NewRootScope()) {
    Scope s = root.WithDeviceFunction(ReplicaDeviceSetter(
        1, "/job:worker/task:0", ReplicaDeviceSetterOptions()));
    global_step = GetOrCreateGlobalStep(s);
    w = ops::Variable(s.WithOpName("w"), 100.0f);
    Output bump = ops::AssignAdd(s.WithOpName("bump"), w, 1.0f);
    Output tick = ops::AssignAdd(s.WithOpName("tick"), global_step, int64_t{1});
    train = ops::Group(s.WithOpName("train"), {bump.op(), tick.op()});
    options.master = cluster->server("worker", 0)->target();
    options.is_chief = true;
    options.log_step_count_steps = 0;
    options.max_wait_secs = 30;
    options.scaffold.saver = Saver::Create(root).value();
    options.scaffold.ready_op =
        ops::ReportUninitializedVariables(root, ops::GlobalVariables(root));
  }
  Scope root;
  ops::Variable global_step, w;
  Operation train;
  MonitoredTrainingSession::Options options;
};

TEST(RecoverableSessionTest, SideStepAfterAPsRestartSeesTheRestoredModel) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  std::string dir = ::testing::TempDir() + "recoverable_session_XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  Chief chief(cluster->get());
  chief.options.checkpoint_dir = dir;
  chief.options.save_checkpoint_steps = 3;
  chief.options.hooks.push_back(StopAtStepHook::Create(12));
  auto side = RecoverableSession::Create(chief.root, chief.options);
  ASSERT_TRUE(side.ok()) << side.status();
  SessionOptions plain_options;
  plain_options.target = chief.options.master;
  auto plain = ClientSession::Create(chief.root, plain_options);
  ASSERT_TRUE(plain.ok()) << plain.status();
  auto session = MonitoredTrainingSession::Create(chief.root, chief.options);
  ASSERT_TRUE(session.ok()) << session.status();
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE((*session)->RunTargets({chief.train}).ok());
  }
  auto before = (*side)->Run({chief.w});
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ((*before)[0].scalar<float>(), 107.0f);
  ASSERT_TRUE((*plain)->Run({chief.w}).ok());

  ASSERT_TRUE((*cluster)->Restart("ps", 0).ok());
  // The plain session's partitions died with the ps: a step it ran before
  // fails with ABORTED, one it never ran finds the variables gone.
  // (UNAVAILABLE first if the call meets the old connection closing.)
  auto stale = (*plain)->Run({chief.w});
  const absl::Time deadline = absl::Now() + absl::Seconds(15);
  while (absl::IsUnavailable(stale.status()) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(100));
    stale = (*plain)->Run({chief.w});
  }
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kAborted)
      << stale.status();
  auto fresh = (*plain)->Run({chief.global_step});
  EXPECT_EQ(fresh.status().code(), absl::StatusCode::kFailedPrecondition)
      << fresh.status();
  // The side session restores the checkpoint of step 6 and reads it, after
  // either error.
  auto after = (*side)->Run({chief.w});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ((*after)[0].scalar<float>(), 106.0f);
  EXPECT_EQ((*side)->num_recoveries(), 1);
  ASSERT_TRUE((*cluster)->Restart("ps", 0).ok());
  after = (*side)->Run({chief.w, chief.global_step});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ((*after)[0].scalar<float>(), 106.0f);
  EXPECT_EQ((*after)[1].scalar<int64_t>(), 6);
  EXPECT_EQ((*side)->num_recoveries(), 2);
  // The monitored session recovers too and keeps the restored model.
  while (!(*session)->ShouldStop()) {
    ASSERT_TRUE((*session)->RunTargets({chief.train}).ok());
  }
  auto last = (*side)->Run({chief.w});
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ((*last)[0].scalar<float>(), 112.0f);
  EXPECT_EQ((*side)->num_recoveries(), 2);
}

TEST(RecoverableSessionTest, GivesUpOnAPsThatStaysDownNamingIt) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Chief chief(cluster->get());
  chief.options.max_wait_secs = 1;
  auto side = RecoverableSession::Create(chief.root, chief.options);
  ASSERT_TRUE(side.ok()) << side.status();
  // Its first step creates the session: the chief initializes the model.
  auto first = (*side)->Run({chief.w});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)[0].scalar<float>(), 100.0f);

  const std::string ps = (*cluster)->address("ps", 0);
  (*cluster)->Kill("ps", 0);
  const absl::Time start = absl::Now();
  auto out = (*side)->Run({chief.w});
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded)
      << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr(ps));
  EXPECT_THAT(out.status().message(), HasSubstr("max_wait_secs"));
}

TEST(RecoverableSessionTest, MaxWaitMustBePositive) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Chief chief(cluster->get());
  chief.options.max_wait_secs = 0;
  auto side = RecoverableSession::Create(chief.root, chief.options);
  ASSERT_FALSE(side.ok());
  EXPECT_EQ(side.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(side.status().message(), HasSubstr("max_wait_secs"));
}

}  // namespace
}  // namespace train
}  // namespace distflow
