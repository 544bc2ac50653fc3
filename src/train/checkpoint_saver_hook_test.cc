// CheckpointSaverHook when saving fails: training goes on and the next
// interval tries again (faults injected through base/file.h's hook).
#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/file.h"
#include "distflow/ops.h"
#include "distflow/train/global_step.h"
#include "distflow/train/hooks.h"
#include "distflow/train/monitored_session.h"
#include "distflow/train/saver.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "train/checkpoint_test_util.h"

namespace distflow {
namespace train {
namespace {

using ::testing::HasSubstr;

TEST(CheckpointSaverHookFaultTest, FullDiskSkipsOneSaveAndTrainingGoesOn) {
  Scope root = Scope::NewRootScope();
  ops::Variable step = GetOrCreateGlobalStep(root);
  ops::Variable weight(root.WithOpName("weight"), 1.0f);
  Output tick = ops::AssignAdd(root, step, int64_t{1});
  const std::string dir = TestDir();
  MonitoredTrainingSession::Options options;
  options.checkpoint_dir = dir;
  options.save_checkpoint_steps = 2;
  options.save_summaries_steps = 0;
  options.log_step_count_steps = 0;
  auto session = MonitoredTrainingSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  auto exists = [&](int s) {
    return std::filesystem::exists(
        absl::StrCat(dir, "/model.ckpt-", s, ".index.json"));
  };

  // The disk fills up: every write of a file fails.
  SetFileFaultHookForTesting([](absl::string_view call, const std::string&) {
    return call == "write" ? ENOSPC : 0;
  });
  testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    absl::Status s = (*session)->RunTargets({tick.op()});
    EXPECT_TRUE(s.ok()) << "step " << i << ": " << s;
  }
  const std::string log = testing::internal::GetCapturedStderr();
  SetFileFaultHookForTesting(nullptr);
  EXPECT_FALSE(exists(2));
  EXPECT_THAT(log, HasSubstr("no checkpoint in '" + dir + "'"));
  EXPECT_THAT(log, HasSubstr("global step 2"));
  EXPECT_THAT(log, HasSubstr("No space left on device"));

  // Space again: the next interval saves, not the next step.
  EXPECT_FALSE(exists(3));
  ASSERT_TRUE((*session)->RunTargets({tick.op()}).ok());
  EXPECT_TRUE(exists(4));
  ASSERT_TRUE((*session)->Close().ok());
  auto latest = LatestCheckpoint(dir);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, dir + "/model.ckpt-4");
}

// A checkpoint directory that cannot be created (a file is in the way) costs
// the checkpoints, not the training.
TEST(CheckpointSaverHookFaultTest, UnwritableDirectoryIsLoggedNotFatal) {
  Scope root = Scope::NewRootScope();
  ops::Variable step = GetOrCreateGlobalStep(root);
  Output tick = ops::AssignAdd(root, step, int64_t{1});
  const std::string dir = TestDir() + "/ckpt";
  MonitoredTrainingSession::Options options;
  options.checkpoint_dir = dir;
  options.save_checkpoint_steps = 1;
  options.save_summaries_steps = 0;
  options.log_step_count_steps = 0;
  auto session = MonitoredTrainingSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  // After the session started: the directory is replaced by a file.
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(WriteFileAtomically(dir, "not a directory").ok());
  testing::internal::CaptureStderr();
  for (int i = 0; i < 2; ++i) {
    absl::Status s = (*session)->RunTargets({tick.op()});
    EXPECT_TRUE(s.ok()) << "step " << i << ": " << s;
  }
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("no checkpoint in '" + dir + "'"));
  EXPECT_THAT(log, HasSubstr("global step 1"));
  EXPECT_THAT(log, HasSubstr("global step 2"));
}

}  // namespace
}  // namespace train
}  // namespace distflow
