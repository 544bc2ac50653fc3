// Recovery from killed tasks, with real processes on 127.0.0.1: a training
// job (recovery_trainer) runs, one of its tasks is killed with SIGKILL in the
// middle of training and started again on the same port, and the job must
// still reach its last step, lose at most the steps since the last
// checkpoint, and end with every ps task exiting by itself with status 0.
// Every case runs with asynchronous and with synchronous updates
// (SyncReplicasOptimizer, whose chief runs an aggregation loop of its own).
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "subprocess.h"
#include "trainer_output.h"

namespace distflow {
namespace {

using ::distflow::testing::GlobalSteps;
using ::distflow::testing::PickFreePort;
using ::distflow::testing::Subprocess;
using ::testing::HasSubstr;
using ::testing::Not;

// Generous: the machine running the tests may be loaded.
constexpr auto kTimeout = std::chrono::seconds(60);

int64_t LastStep(const Subprocess& task) {
  auto steps = GlobalSteps(task.Output());
  return steps.empty() ? 0 : *std::max_element(steps.begin(), steps.end());
}

// Polls `done` until it holds or kTimeout passes; returns whether it held.
bool WaitUntil(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + kTimeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// A job of recovery_trainer processes: ps tasks and workers, each restartable
// on its own port. Killed processes are kept so their output stays readable.
class Job {
 public:
  // Worker i gets worker_flags[i], and every worker --issync=1 if `sync`.
  Job(int num_ps, std::vector<std::vector<std::string>> worker_flags,
      bool sync = false)
      : worker_flags_(std::move(worker_flags)) {
    if (sync) {
      for (auto& flags : worker_flags_) flags.push_back("--issync=1");
    }
    const int num_workers = static_cast<int>(worker_flags_.size());
    std::vector<std::string> ps, workers;
    for (int i = 0; i < num_ps; ++i) {
      ps.push_back(absl::StrCat("127.0.0.1:", PickFreePort()));
    }
    for (int i = 0; i < num_workers; ++i) {
      workers.push_back(absl::StrCat("127.0.0.1:", PickFreePort()));
    }
    ps_hosts_ = absl::StrJoin(ps, ",");
    worker_hosts_ = absl::StrJoin(workers, ",");
    checkpoint_dir_ = ::testing::TempDir() + "recovery_test_XXXXXX";
    if (mkdtemp(checkpoint_dir_.data()) == nullptr) checkpoint_dir_.clear();
    for (int i = 0; i < num_ps; ++i) ps_.push_back(Start("ps", i));
    for (int i = 0; i < num_workers; ++i)
      workers_.push_back(Start("worker", i));
  }

  Subprocess& ps(int i) { return *ps_[i]; }
  Subprocess& worker(int i) { return *workers_[i]; }
  const std::string& ps_hosts() const { return ps_hosts_; }

  // kill -9.
  void Kill(const std::string& job, int i) { Slot(job, i)->Kill(); }
  // Starts a killed task again with the same flags and port. The new process
  // replaces the old one (kept, so that its output file stays).
  void StartAgain(const std::string& job, int i) {
    auto& slot = Slot(job, i);
    killed_.push_back(std::move(slot));
    slot = Start(job, i);
  }
  void Restart(const std::string& job, int i) {
    Kill(job, i);
    StartAgain(job, i);
  }

  // Every live task's output, for failure messages.
  std::string AllOutput() const {
    std::string all;
    for (size_t i = 0; i < ps_.size(); ++i) {
      absl::StrAppend(&all, "--- ps ", i, ":\n", ps_[i]->Output());
    }
    for (size_t i = 0; i < workers_.size(); ++i) {
      absl::StrAppend(&all, "--- worker ", i, ":\n", workers_[i]->Output());
    }
    return all;
  }

  // The highest global step any worker printed.
  int64_t MaxStep() const {
    int64_t step = 0;
    for (const auto& worker : workers_)
      step = std::max(step, LastStep(*worker));
    return step;
  }

  // Every task exits with status 0 within kTimeout: workers when training is
  // done, ps tasks by themselves once the chief has ended the job.
  void ExpectAllExitCleanly() {
    for (auto* tasks : {&workers_, &ps_}) {
      for (auto& task : *tasks) {
        auto code = task->Wait(kTimeout);
        ASSERT_TRUE(code.has_value()) << "a task did not exit:\n"
                                      << task->Output();
        EXPECT_EQ(*code, 0) << task->Output();
      }
    }
  }

 private:
  std::unique_ptr<Subprocess>& Slot(const std::string& job, int i) {
    return job == "ps" ? ps_[i] : workers_[i];
  }

  std::unique_ptr<Subprocess> Start(const std::string& job, int i) {
    std::vector<std::string> argv = {
        absl::StrCat(DISTFLOW_BIN_DIR, "/recovery_trainer"),
        "--job_name=" + job,
        absl::StrCat("--task_index=", i),
        "--ps_hosts=" + ps_hosts_,
        "--worker_hosts=" + worker_hosts_,
        "--checkpoint_dir=" + checkpoint_dir_};
    if (job == "worker") {
      argv.insert(argv.end(), worker_flags_[i].begin(), worker_flags_[i].end());
    }
    return std::make_unique<Subprocess>(argv);
  }

  std::vector<std::vector<std::string>> worker_flags_;
  std::string ps_hosts_, worker_hosts_, checkpoint_dir_;
  std::vector<std::unique_ptr<Subprocess>> ps_, workers_, killed_;
};

// The global step the chief restored ("restored checkpoint ... (global step
// N)" in its log), or -1.
int64_t RestoredStep(const std::string& output) {
  const std::string marker = "(global step ";
  const size_t restored = output.find("Chief restored checkpoint");
  int64_t step = -1;
  if (restored == std::string::npos) return step;
  const size_t at = output.find(marker, restored);
  if (at == std::string::npos) return step;
  const size_t end = output.find(')', at);
  (void)absl::SimpleAtoi(
      output.substr(at + marker.size(), end - at - marker.size()), &step);
  return step;
}

// The recovery cases, with asynchronous (false) and synchronous (true)
// updates.
class RecoveryTest : public ::testing::TestWithParam<bool> {
 protected:
  bool sync() const { return GetParam(); }
};

INSTANTIATE_TEST_SUITE_P(Updates, RecoveryTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Sync" : "Async";
                         });

// A ps task dies and comes back empty: both workers see it fail, their
// monitored sessions create themselves again, the chief restores the latest
// checkpoint, and training goes on from there to its last step.
TEST_P(RecoveryTest, PsRestartResumesFromTheLastCheckpoint) {
  constexpr int kSaveSteps = 20;
  const std::vector<std::string> flags = {
      "--last_step=300", absl::StrCat("--save_checkpoint_steps=", kSaveSteps),
      "--step_delay_ms=10"};
  Job job(2, {flags, flags}, sync());
  // ps 0 holds the global step (the replica device setter's first variable).
  ASSERT_TRUE(WaitUntil([&] { return LastStep(job.worker(0)) >= 60; }))
      << job.AllOutput();
  job.Restart("ps", 0);
  job.ExpectAllExitCleanly();

  // Each worker's steps before and after it saw the failure and created its
  // session again (one thread does both, so the order of lines is exact).
  const std::string kRecovering = "Recovering the monitored session from:";
  int64_t before = 0;
  std::vector<int64_t> after;
  std::string chief;
  for (int i = 0; i < 2; ++i) {
    const std::string out = job.worker(i).Output();
    const size_t at = out.find(kRecovering);
    ASSERT_NE(at, std::string::npos) << "worker " << i << ":\n" << out;
    // What the worker saw: the ps unreachable (UNAVAILABLE, naming its
    // address) or, had it come back before the worker's next call,
    // restarted (ABORTED, naming the task).
    const std::string seen = out.substr(at, out.find('\n', at) - at);
    const std::string ps_address =
        job.ps_hosts().substr(0, job.ps_hosts().find(','));
    EXPECT_TRUE((seen.find("UNAVAILABLE") != std::string::npos &&
                 seen.find(ps_address) != std::string::npos) ||
                (seen.find("ABORTED") != std::string::npos &&
                 seen.find("/job:ps/replica:0/task:0") != std::string::npos))
        << "worker " << i << ": " << seen;
    for (int64_t step : GlobalSteps(out.substr(0, at))) {
      before = std::max(before, step);
    }
    for (int64_t step : GlobalSteps(out.substr(at))) after.push_back(step);
    if (i == 0) chief = out.substr(at);
  }
  // The chief restored a checkpoint, never step 0, and training went on
  // from there: at most the steps since that checkpoint (one save interval,
  // and the other worker's few steps in between) were done again.
  const int64_t restored = RestoredStep(chief);
  ASSERT_GT(restored, 0) << chief;
  ASSERT_FALSE(after.empty()) << chief;
  const int64_t resumed = *std::min_element(after.begin(), after.end());
  // Training resumes right after the restored step. A step that reached the
  // restored ps while its worker was still recovering can have advanced the
  // global step without being printed, so allow a step or two of slack. In
  // synchronous training a worker's step ends once its gradient is in, which
  // can be before the chief applies it: it may print the restored step.
  EXPECT_GE(resumed, restored + (sync() ? 0 : 1));
  EXPECT_LE(resumed, restored + 3);
  EXPECT_LE(before - resumed + 1, kSaveSteps + 5)
      << "killed at global step " << before << ", resumed at " << resumed;
  EXPECT_GE(job.MaxStep(), 300);
}

// A non-chief worker dies: in asynchronous training the chief's global step
// keeps advancing without it; in synchronous training every step waits for
// its gradient, as in TensorFlow (backup workers are the remedy; see
// WorkerStartedAfterTheJobEndedExitsCleanly). The restarted worker rejoins and
// does steps, and the job ends normally.
TEST_P(RecoveryTest, NonChiefDeathDoesNotStopTheOthersAndItRejoins) {
  const std::vector<std::string> flags = {
      "--last_step=600", "--save_checkpoint_steps=50", "--step_delay_ms=20"};
  Job job(1, {flags, flags}, sync());
  ASSERT_TRUE(WaitUntil([&] { return LastStep(job.worker(1)) >= 30; }))
      << job.AllOutput();
  job.Kill("worker", 1);
  const int64_t at_death = LastStep(job.worker(0));
  if (!sync()) {
    ASSERT_TRUE(WaitUntil([&] {
      return LastStep(job.worker(0)) >= at_death + 20;
    })) << "the chief stopped when worker 1 died:\n"
        << job.AllOutput();
  }
  job.StartAgain("worker", 1);
  ASSERT_TRUE(WaitUntil([&] {
    return !GlobalSteps(job.worker(1).Output()).empty();
  })) << job.AllOutput();
  // It joined the running model: its first step follows the others'.
  const int64_t first = GlobalSteps(job.worker(1).Output()).front();
  if (sync()) {
    EXPECT_GE(first, at_death);
  } else {
    EXPECT_GT(first, at_death);
  }
  job.ExpectAllExitCleanly();
  EXPECT_THAT(job.worker(1).Output(), HasSubstr("worker:1 done"));
  EXPECT_GE(job.MaxStep(), 600);
}

// The chief dies: meanwhile the other worker keeps training (asynchronous)
// or waits for the chief's aggregation (synchronous); restarted, the chief
// finds the model ready on the ps tasks and continues from where it is (no
// roll-back to the checkpoint), and the job ends normally.
TEST_P(RecoveryTest, ChiefRestartContinuesAndOthersAreNotStuck) {
  const std::vector<std::string> flags = {
      "--last_step=600", "--save_checkpoint_steps=50", "--step_delay_ms=20"};
  Job job(2, {flags, flags}, sync());
  ASSERT_TRUE(WaitUntil([&] { return LastStep(job.worker(0)) >= 60; }))
      << job.AllOutput();
  job.Kill("worker", 0);
  const int64_t at_death = LastStep(job.worker(1));
  if (!sync()) {
    ASSERT_TRUE(WaitUntil([&] {
      return LastStep(job.worker(1)) >= at_death + 30;
    })) << "worker 1 was stuck while the chief was dead:\n"
        << job.AllOutput();
  }
  const int64_t before_restart = LastStep(job.worker(1));
  job.Restart("worker", 0);
  ASSERT_TRUE(WaitUntil([&] {
    return !GlobalSteps(job.worker(0).Output()).empty();
  })) << job.AllOutput();
  const std::string chief = job.worker(0).Output();
  EXPECT_THAT(chief, HasSubstr("found the model ready"));
  EXPECT_THAT(chief, Not(HasSubstr("restored checkpoint")));
  // Continued, not rolled back to a checkpoint.
  if (sync()) {
    EXPECT_GE(GlobalSteps(chief).front(), before_restart);
  } else {
    EXPECT_GT(GlobalSteps(chief).front(), before_restart);
  }
  job.ExpectAllExitCleanly();
  EXPECT_GE(job.MaxStep(), 600);
  EXPECT_THAT(job.worker(0).Output(), HasSubstr("worker:0 done"));
}

// When the chief finishes, every ps task exits by itself with status 0, and
// a worker still training (its own last step is far away) ends normally
// when the ps tasks refuse its next step, instead of failing or hanging.
TEST_P(RecoveryTest, PsTasksExitWhenTheChiefFinishes) {
  Job job(2,
          {{"--last_step=100", "--step_delay_ms=5"},
           {"--last_step=100000000", "--step_delay_ms=5"}},
          sync());
  job.ExpectAllExitCleanly();
  EXPECT_THAT(job.worker(0).Output(), HasSubstr("worker:0 done"));
  EXPECT_THAT(job.worker(1).Output(), HasSubstr("worker:1 done"));
  EXPECT_THAT(job.worker(1).Output(), HasSubstr("Training has ended"));
  // Not a failure (it exited with 0 above), nor a recovery.
  EXPECT_THAT(job.worker(1).Output(), Not(HasSubstr("Recovering")));
  for (int i = 0; i < 2; ++i) {
    EXPECT_THAT(job.ps(i).Output(), HasSubstr("the chief finished training"));
  }
}

// A worker killed early and started again only after the chief has ended the
// job: its session is refused (the job is over), and it exits 0 saying so,
// as a worker whose step is refused does; then the ps tasks exit too.
TEST_P(RecoveryTest, WorkerStartedAfterTheJobEndedExitsCleanly) {
  // Synchronous: one gradient a step suffices, the other worker is a backup,
  // so that the chief trains on alone.
  std::vector<std::string> flags = {"--last_step=60", "--step_delay_ms=5",
                                    "--replicas_to_aggregate=1"};
  Job job(1, {flags, flags}, sync());
  ASSERT_TRUE(WaitUntil([&] {
    return job.worker(1).Output().find("ready") != std::string::npos;
  })) << job.AllOutput();
  job.Kill("worker", 1);
  // The chief trains on alone and ends the job.
  auto chief_code = job.worker(0).Wait(kTimeout);
  ASSERT_TRUE(chief_code.has_value()) << job.AllOutput();
  ASSERT_EQ(*chief_code, 0) << job.worker(0).Output();
  job.StartAgain("worker", 1);
  job.ExpectAllExitCleanly();
  EXPECT_THAT(job.worker(1).Output(), HasSubstr("Training has ended"));
  EXPECT_THAT(job.worker(1).Output(), HasSubstr("worker:1 done"));
}

}  // namespace
}  // namespace distflow
