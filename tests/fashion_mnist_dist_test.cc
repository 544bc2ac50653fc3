// build/bin/fashion_mnist as a real cluster on 127.0.0.1: one ps and two
// workers, each a process with the seeds' flags, training the MLP for a few
// hundred global steps on Fashion-MNIST.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "subprocess.h"

namespace distflow {
namespace {

using ::distflow::testing::PickFreePort;
using ::distflow::testing::Subprocess;
using ::testing::HasSubstr;

constexpr auto kTimeout = std::chrono::seconds(120);
constexpr int kTrainSteps = 300;

std::string Address() { return absl::StrCat("127.0.0.1:", PickFreePort()); }

std::unique_ptr<Subprocess> StartTask(const std::string& job, int index,
                                      const std::string& ps_hosts,
                                      const std::string& worker_hosts,
                                      std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{
      absl::StrCat(DISTFLOW_BIN_DIR, "/fashion_mnist"),
      "--job_name=" + job,
      absl::StrCat("--task_index=", index),
      "--ps_hosts=" + ps_hosts,
      "--worker_hosts=" + worker_hosts,
      "--model=mlp",
      "--batch_size=50",
      absl::StrCat("--train_steps=", kTrainSteps),
      "--steps_to_validate=100",
      "--log_every=50",
      "--threads=1"};
  // A flag in `extra` replaces the default above.
  for (const std::string& flag : extra) {
    const std::string name = flag.substr(0, flag.find('=') + 1);
    argv.erase(std::remove_if(argv.begin() + 1, argv.end(),
                              [&](const std::string& arg) {
                                return arg.rfind(name, 0) == 0;
                              }),
               argv.end());
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  return std::make_unique<Subprocess>(argv);
}

// The number after `key=` in `text`, or -1.
double ValueOf(const std::string& text, const std::string& key) {
  std::smatch match;
  if (!std::regex_search(text, match, std::regex(key + "=([0-9.]+)"))) {
    return -1;
  }
  return std::strtod(match[1].str().c_str(), nullptr);
}

TEST(FashionMnistDistributedTest, OnePsTwoWorkersTrainAndEveryTaskExits) {
  const std::string ps_hosts = Address();
  const std::string worker_hosts = absl::StrCat(Address(), ",", Address());
  auto ps = StartTask("ps", 0, ps_hosts, worker_hosts);
  auto worker1 = StartTask("worker", 1, ps_hosts, worker_hosts);
  auto chief = StartTask("worker", 0, ps_hosts, worker_hosts);
  ASSERT_TRUE(ps->started() && worker1->started() && chief->started());

  for (Subprocess* worker : {chief.get(), worker1.get()}) {
    auto code = worker->Wait(kTimeout);
    ASSERT_TRUE(code.has_value()) << "a worker hung: " << worker->Output();
    EXPECT_EQ(*code, 0) << worker->Output();
  }
  // Nobody stops the ps but the chief.
  auto ps_code = ps->Wait(std::chrono::seconds(30));
  ASSERT_TRUE(ps_code.has_value()) << "the ps did not exit: " << ps->Output();
  EXPECT_EQ(*ps_code, 0) << ps->Output();

  const std::string out = chief->Output();
  // Above chance (0.1) by far: 300 steps of 50 reach about 0.8.
  EXPECT_GT(ValueOf(out, "test_accuracy"), 0.5) << out;
  // A validation once the global step passes each multiple of 100 below the
  // last step: at 100-199, then at 200-299. The other worker's steps may
  // carry the global step a little past a multiple, or, while the chief
  // validates on a loaded machine, past the next one, which then has none.
  std::vector<int> validated_at;
  const std::regex validation("global_step=([0-9]+) validation_accuracy=");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), validation);
       it != std::sregex_iterator(); ++it) {
    validated_at.push_back(std::stoi((*it)[1].str()));
  }
  ASSERT_GE(validated_at.size(), 1u) << out;
  ASSERT_LE(validated_at.size(), 2u) << out;
  for (size_t i = 0; i < validated_at.size(); ++i) {
    EXPECT_GE(validated_at[i], 100 * (i + 1)) << out;
    EXPECT_LT(validated_at[i], 100 * (i + 2)) << out;
  }
  EXPECT_GT(ValueOf(out, "validation_accuracy"), 0.5) << out;
  EXPECT_EQ(worker1->Output().find("test_accuracy"), std::string::npos);
  // Both workers trained, and together they took the global steps.
  const double chief_steps = ValueOf(out, "local_steps");
  const double worker1_steps = ValueOf(worker1->Output(), "local_steps");
  EXPECT_GT(chief_steps, 0) << out;
  EXPECT_GT(worker1_steps, 0) << worker1->Output();
  EXPECT_GE(chief_steps + worker1_steps, kTrainSteps);
  for (Subprocess* worker : {chief.get(), worker1.get()}) {
    EXPECT_GE(ValueOf(worker->Output(), "stopped at global_step"), kTrainSteps)
        << worker->Output();
  }
}

// Waits until `task` prints `text`; false if it exits or `timeout` passes
// first.
bool WaitForOutput(Subprocess* task, const std::string& text,
                   std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (task->Output().find(text) == std::string::npos) {
    if (task->Wait(std::chrono::milliseconds(0)).has_value() ||
        std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return true;
}

// The chief finishing first must not end the job for the others: with a
// second worker that starts only after the chief has trained all the steps,
// the ps keeps serving (for longer than EndJob's idle grace of 2 s) until
// that worker has reported done, and then every task exits with status 0.
TEST(FashionMnistDistributedTest, PsOutlivesTheChiefUntilEveryWorkerIsDone) {
  const std::string ps_hosts = Address();
  const std::string worker_hosts = absl::StrCat(Address(), ",", Address());
  auto ps = StartTask("ps", 0, ps_hosts, worker_hosts);
  auto chief = StartTask("worker", 0, ps_hosts, worker_hosts);
  ASSERT_TRUE(WaitForOutput(chief.get(), "test_accuracy", kTimeout))
      << chief->Output();
  std::this_thread::sleep_for(std::chrono::seconds(4));
  ASSERT_FALSE(ps->Wait(std::chrono::milliseconds(0)).has_value())
      << "the ps exited before worker 1 was done: " << ps->Output();
  ASSERT_FALSE(chief->Wait(std::chrono::milliseconds(0)).has_value())
      << "the chief did not wait for worker 1: " << chief->Output();

  auto worker1 = StartTask("worker", 1, ps_hosts, worker_hosts);
  for (Subprocess* task : {worker1.get(), chief.get(), ps.get()}) {
    auto code = task->Wait(kTimeout);
    ASSERT_TRUE(code.has_value()) << "a task hung: " << task->Output();
    EXPECT_EQ(*code, 0) << task->Output();
  }
  // The late worker found the last step reached: it stopped after its first
  // step instead of training on.
  EXPECT_LE(ValueOf(worker1->Output(), "local_steps"), 1) << worker1->Output();
  EXPECT_GE(ValueOf(worker1->Output(), "stopped at global_step"), kTrainSteps)
      << worker1->Output();
}

// --issync: every global step averages one gradient of each worker, so both
// take about as many steps as there are global steps (asynchronous workers
// would share them, about half each).
TEST(FashionMnistDistributedTest, SynchronousTrainingWithTwoWorkers) {
  const std::string ps_hosts = Address();
  const std::string worker_hosts = absl::StrCat(Address(), ",", Address());
  auto ps = StartTask("ps", 0, ps_hosts, worker_hosts, {"--issync=1"});
  auto worker1 = StartTask("worker", 1, ps_hosts, worker_hosts, {"--issync=1"});
  auto chief = StartTask("worker", 0, ps_hosts, worker_hosts, {"--issync=1"});
  for (Subprocess* worker : {chief.get(), worker1.get()}) {
    auto code = worker->Wait(kTimeout);
    ASSERT_TRUE(code.has_value()) << "a worker hung: " << worker->Output();
    EXPECT_EQ(*code, 0) << worker->Output();
  }
  auto ps_code = ps->Wait(std::chrono::seconds(30));
  ASSERT_TRUE(ps_code.has_value()) << "the ps did not exit: " << ps->Output();
  EXPECT_EQ(*ps_code, 0) << ps->Output();
  EXPECT_GT(ValueOf(chief->Output(), "test_accuracy"), 0.5) << chief->Output();
  for (Subprocess* worker : {chief.get(), worker1.get()}) {
    EXPECT_GE(ValueOf(worker->Output(), "local_steps"), kTrainSteps * 9 / 10)
        << worker->Output();
  }
}

// A job that finds a checkpoint resumes from it: the global step goes on
// where the last run saved it.
TEST(FashionMnistDistributedTest, ResumesFromTheLatestCheckpoint) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "fashion_mnist_ckpt_", getpid());
  auto run = [&](int train_steps) {
    const std::string ps = Address(), worker = Address();
    std::vector<std::string> flags = {
        "--batch_size=50", absl::StrCat("--train_steps=", train_steps),
        "--threads=1", "--checkpoint_dir=" + dir};
    auto task = [&](const std::string& job) {
      std::vector<std::string> argv = {
          absl::StrCat(DISTFLOW_BIN_DIR, "/fashion_mnist"), "--job_name=" + job,
          "--task_index=0", "--ps_hosts=" + ps, "--worker_hosts=" + worker};
      argv.insert(argv.end(), flags.begin(), flags.end());
      return std::make_unique<Subprocess>(argv);
    };
    auto ps_task = task("ps");
    auto chief = task("worker");
    auto code = chief->Wait(kTimeout);
    EXPECT_TRUE(code.has_value() && *code == 0) << chief->Output();
    auto ps_code = ps_task->Wait(std::chrono::seconds(30));
    EXPECT_TRUE(ps_code.has_value() && *ps_code == 0) << ps_task->Output();
    return chief->Output();
  };
  const std::string first = run(100);
  EXPECT_THAT(first, HasSubstr("Saved checkpoint"));
  EXPECT_THAT(first, ::testing::Not(HasSubstr("restored")));
  const std::string second = run(150);
  EXPECT_THAT(second, HasSubstr("restored"));
  // It trained only the 50 steps left (one more if the step it read was
  // stale), not 150.
  EXPECT_LE(ValueOf(second, "local_steps"), 51) << second;
  EXPECT_GT(ValueOf(second, "test_accuracy"), 0.5) << second;
  std::filesystem::remove_all(dir);
}

// Kubeflow's way: no cluster flags, each task's role in TF_CONFIG.
TEST(FashionMnistDistributedTest, TasksFromTfConfig) {
  const std::string ps = Address(), worker = Address();
  const std::string cluster =
      absl::StrCat(R"({"cluster": {"ps": [")", ps, R"("], "worker": [")",
                   worker, R"("]}, "task": {"type": ")");
  auto start = [&](const std::string& type) {
    setenv("TF_CONFIG", (cluster + type + R"(", "index": 0}})").c_str(), 1);
    auto task = std::make_unique<Subprocess>(std::vector<std::string>{
        absl::StrCat(DISTFLOW_BIN_DIR, "/fashion_mnist"), "--batch_size=50",
        "--train_steps=200", "--threads=1"});
    unsetenv("TF_CONFIG");
    return task;
  };
  auto ps_task = start("ps");
  auto chief = start("worker");
  auto code = chief->Wait(kTimeout);
  ASSERT_TRUE(code.has_value()) << "the worker hung: " << chief->Output();
  EXPECT_EQ(*code, 0) << chief->Output();
  EXPECT_GT(ValueOf(chief->Output(), "test_accuracy"), 0.5) << chief->Output();
  auto ps_code = ps_task->Wait(std::chrono::seconds(30));
  ASSERT_TRUE(ps_code.has_value())
      << "the ps did not exit: " << ps_task->Output();
  EXPECT_EQ(*ps_code, 0) << ps_task->Output();
}

TEST(FashionMnistDistributedTest, UnknownJobIsAnErrorNamingIt) {
  const std::string ps_hosts = Address(), worker_hosts = Address();
  Subprocess task({absl::StrCat(DISTFLOW_BIN_DIR, "/fashion_mnist"),
                   "--job_name=evaluator", "--task_index=0",
                   "--ps_hosts=" + ps_hosts, "--worker_hosts=" + worker_hosts});
  auto code = task.Wait(std::chrono::seconds(30));
  ASSERT_TRUE(code.has_value()) << task.Output();
  EXPECT_EQ(*code, 1);
  EXPECT_THAT(task.Output(), HasSubstr("evaluator"));
}

// Waits until `task` has printed each of `texts`, in that order.
bool WaitForOutputsInOrder(Subprocess* task,
                           const std::vector<std::string>& texts) {
  const auto deadline = std::chrono::steady_clock::now() + kTimeout;
  for (;;) {
    const std::string out = task->Output();
    size_t at = 0;
    for (const std::string& text : texts) {
      at = out.find(text, at);
      if (at == std::string::npos) break;
    }
    if (at != std::string::npos) return true;
    if (task->Wait(std::chrono::milliseconds(0)).has_value() ||
        std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// The chief is killed (SIGKILL) `settle` after it prints `kill_after`; worker 1
// (started with the chief, or only once the chief is dead) trains to the last
// step and reports done while the chief is down; then the chief starts again.
// It must find the model on the ps, see that worker 1 has reported (the
// report lives on the ps, which kept running), and end the job at once
// rather than wait its full minute; then worker 1 and the ps must exit with
// status 0 by themselves.
void ExpectRestartedChiefEndsTheJob(const std::vector<std::string>& kill_after,
                                    std::chrono::milliseconds settle,
                                    bool worker1_with_the_chief) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "fashion_mnist_chief_", getpid());
  const std::vector<std::string> flags = {"--checkpoint_dir=" + dir,
                                          "--save_checkpoint_steps=100"};
  const std::string ps_hosts = Address();
  const std::string worker_hosts = absl::StrCat(Address(), ",", Address());
  auto ps = StartTask("ps", 0, ps_hosts, worker_hosts);
  auto chief = StartTask("worker", 0, ps_hosts, worker_hosts, flags);
  std::unique_ptr<Subprocess> worker1;
  if (worker1_with_the_chief) {
    worker1 = StartTask("worker", 1, ps_hosts, worker_hosts, flags);
  }
  ASSERT_TRUE(WaitForOutputsInOrder(chief.get(), kill_after))
      << chief->Output();
  std::this_thread::sleep_for(settle);
  chief->Kill();
  if (!worker1_with_the_chief) {
    worker1 = StartTask("worker", 1, ps_hosts, worker_hosts, flags);
  }
  // Worker 1 keeps its report until the chief ends the job.
  ASSERT_TRUE(WaitForOutput(worker1.get(), "reported done", kTimeout))
      << worker1->Output();
  EXPECT_GE(ValueOf(worker1->Output(), "stopped at global_step"), kTrainSteps)
      << worker1->Output();
  ASSERT_FALSE(ps->Wait(std::chrono::milliseconds(0)).has_value())
      << "the ps exited without the chief: " << ps->Output();

  auto restarted = StartTask("worker", 0, ps_hosts, worker_hosts, flags);
  // Well under the minute the chief gives a worker that never reports.
  auto code = restarted->Wait(std::chrono::seconds(45));
  ASSERT_TRUE(code.has_value())
      << "the restarted chief did not end the job: " << restarted->Output();
  EXPECT_EQ(*code, 0) << restarted->Output();
  const std::string out = restarted->Output();
  EXPECT_THAT(out, HasSubstr("found the model ready"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("ending the job anyway")));
  EXPECT_GE(ValueOf(out, "stopped at global_step"), kTrainSteps) << out;
  EXPECT_GT(ValueOf(out, "test_accuracy"), 0.5) << out;
  code = worker1->Wait(std::chrono::seconds(30));
  ASSERT_TRUE(code.has_value()) << "worker 1 hung: " << worker1->Output();
  EXPECT_EQ(*code, 0) << worker1->Output();
  auto ps_code = ps->Wait(std::chrono::seconds(30));
  ASSERT_TRUE(ps_code.has_value()) << "the ps did not exit: " << ps->Output();
  EXPECT_EQ(*ps_code, 0) << ps->Output();
  std::filesystem::remove_all(dir);
}

// Killed in on_training_end, while it waits for worker 1 to report: a second
// after the final evaluation (the last checkpoint was saved at the last step);
// the ps still serves.
TEST(FashionMnistDistributedTest, ChiefKilledInItsFinalWaitRestartsAndEndsJob) {
  ExpectRestartedChiefEndsTheJob({"test_accuracy"}, std::chrono::seconds(1),
                                 /*worker1_with_the_chief=*/false);
}

// Killed in the middle of training: worker 1 takes the remaining steps alone.
TEST(FashionMnistDistributedTest, ChiefKilledWhileTrainingRestartsAndEndsJob) {
  ExpectRestartedChiefEndsTheJob({"progress step="},
                                 std::chrono::milliseconds(0),
                                 /*worker1_with_the_chief=*/true);
}

// The ps task is killed (SIGKILL) and started again on its address, as a
// cluster manager restarts a task; returns the new process.
//
// The tests below kill the ps while the chief trains, between validations,
// and with every worker running (a stopped worker stalls the pushes to it).
// A ps killed during an evaluation batch, after its part of the step has
// ended, is caught by the master's watch over finished tasks instead
// (StepWatchTest, tests/step_watch_process_test.cc), about a second later.
std::unique_ptr<Subprocess> RestartPs(std::unique_ptr<Subprocess> ps,
                                      const std::string& ps_hosts,
                                      const std::string& worker_hosts) {
  ps->Kill();
  return StartTask("ps", 0, ps_hosts, worker_hosts);
}

// Waits for every task in `tasks` to exit with status 0 within `timeout` in
// all; a failure shows every task's output.
void ExpectEveryTaskExitsCleanly(const std::vector<Subprocess*>& tasks,
                                 std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto outputs = [&] {
    std::string all;
    for (size_t i = 0; i < tasks.size(); ++i) {
      absl::StrAppend(&all, "--- task ", i, ":\n", tasks[i]->Output());
    }
    return all;
  };
  for (size_t i = 0; i < tasks.size(); ++i) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    auto code = tasks[i]->Wait(std::max(left, std::chrono::milliseconds(0)));
    ASSERT_TRUE(code.has_value()) << "task " << i << " did not exit in time\n"
                                  << outputs();
    EXPECT_EQ(*code, 0) << "task " << i << " failed\n" << outputs();
  }
}

// The chief validates every 50 global steps through its own session beside
// the monitored one; the ps restarts (losing every variable) just after a
// validation, while the chief trains towards the next. The chief restores the
// latest checkpoint, validation goes on after the restart, the job reaches its
// last step and every task (the restarted ps too) exits with status 0.
TEST(FashionMnistDistributedTest, PsRestartWhileTheChiefValidates) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "fashion_mnist_ps_val_", getpid());
  const std::vector<std::string> flags = {"--checkpoint_dir=" + dir,
                                          "--save_checkpoint_steps=50",
                                          "--steps_to_validate=50"};
  const std::string ps_hosts = Address();
  const std::string worker_hosts = absl::StrCat(Address(), ",", Address());
  auto ps = StartTask("ps", 0, ps_hosts, worker_hosts);
  auto chief = StartTask("worker", 0, ps_hosts, worker_hosts, flags);
  auto worker1 = StartTask("worker", 1, ps_hosts, worker_hosts, flags);
  // A checkpoint (step 50) exists, and the chief has validated since.
  ASSERT_TRUE(WaitForOutputsInOrder(
      chief.get(), {"Saved checkpoint", "validation_accuracy"}))
      << chief->Output();
  ps = RestartPs(std::move(ps), ps_hosts, worker_hosts);
  ExpectEveryTaskExitsCleanly({chief.get(), worker1.get(), ps.get()}, kTimeout);
  const std::string out = chief->Output();
  EXPECT_THAT(out, HasSubstr("restored checkpoint")) << out;
  // The validation session's partitions died with the ps, whichever session
  // noticed the restart first.
  EXPECT_THAT(out, HasSubstr("Recovering the session beside the monitored"))
      << out;
  EXPECT_GE(ValueOf(out, "stopped at global_step"), kTrainSteps) << out;
  EXPECT_GT(ValueOf(out, "test_accuracy"), 0.5) << out;
  // Validation went on after the restore.
  const size_t restored = out.find("restored checkpoint");
  EXPECT_NE(out.find("validation_accuracy", restored), std::string::npos)
      << out;
  std::filesystem::remove_all(dir);
}

// Worker 1 stops early (its own --train_steps=100) and reports done while
// the chief trains on to step 300; then the ps restarts, losing that report
// with every variable, and the chief goes on: it restores the latest
// checkpoint (or initializes the model if it saved none yet) and trains the
// steps left. Worker 1 must report again on the restarted ps, so that the
// chief ends the job at once instead of waiting its full minute for a report
// that will not come, and every task exits with status 0.
TEST(FashionMnistDistributedTest, DoneReportSurvivesAPsRestart) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "fashion_mnist_ps_done_", getpid());
  // No validation: the ps dies while the chief trains (see RestartPs).
  const std::vector<std::string> flags = {"--checkpoint_dir=" + dir,
                                          "--save_checkpoint_steps=50",
                                          "--steps_to_validate=0"};
  const std::string ps_hosts = Address();
  const std::string worker_hosts = absl::StrCat(Address(), ",", Address());
  auto ps = StartTask("ps", 0, ps_hosts, worker_hosts);
  auto chief = StartTask("worker", 0, ps_hosts, worker_hosts, flags);
  std::vector<std::string> worker1_flags = flags;
  worker1_flags.push_back("--train_steps=100");
  auto worker1 = StartTask("worker", 1, ps_hosts, worker_hosts, worker1_flags);
  ASSERT_TRUE(WaitForOutput(worker1.get(), "reported done", kTimeout))
      << worker1->Output();
  ASSERT_FALSE(chief->Wait(std::chrono::milliseconds(0)).has_value())
      << "the chief finished before the ps restart: " << chief->Output();
  ps = RestartPs(std::move(ps), ps_hosts, worker_hosts);
  // Well under the minute the chief gives a worker that never reports.
  ExpectEveryTaskExitsCleanly({chief.get(), worker1.get(), ps.get()},
                              std::chrono::seconds(45));
  const std::string out = chief->Output();
  EXPECT_THAT(out, ::testing::Not(HasSubstr("ending the job anyway"))) << out;
  EXPECT_THAT(worker1->Output(), HasSubstr("reported done again"))
      << worker1->Output();
  EXPECT_GE(ValueOf(out, "stopped at global_step"), kTrainSteps) << out;
  EXPECT_GT(ValueOf(out, "test_accuracy"), 0.5) << out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace distflow
