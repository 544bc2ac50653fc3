// `distflow local` as a user runs it: build/bin/distflow starts real
// processes (the seed example, or small shell programs that fail on purpose)
// and its output, exit status and leftover processes are checked.
#include <errno.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "subprocess.h"

namespace distflow {
namespace {

using ::distflow::testing::Subprocess;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr auto kTimeout = std::chrono::seconds(60);

std::string Binary(const std::string& name) {
  return absl::StrCat(DISTFLOW_BIN_DIR, "/", name);
}

// distflow local FLAGS -- /bin/sh -c SCRIPT sh, so that the flags distflow
// adds are the script's "$@".
std::vector<std::string> LocalShell(std::vector<std::string> flags,
                                    const std::string& script) {
  std::vector<std::string> argv = {Binary("distflow"), "local"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  for (const char* arg : {"--", "/bin/sh", "-c"}) argv.push_back(arg);
  argv.push_back(script);
  argv.push_back("sh");
  return argv;
}

// The pids that tasks printed as "pid=N".
std::vector<pid_t> PrintedPids(const std::string& output) {
  std::vector<pid_t> pids;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    const size_t at = line.find("pid=");
    int pid = 0;
    if (at != absl::string_view::npos &&
        absl::SimpleAtoi(line.substr(at + 4), &pid)) {
      pids.push_back(pid);
    }
  }
  return pids;
}

// The pid that `task` printed as "pid=N" (0 if none).
pid_t PidOf(const std::string& output, const std::string& task) {
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (!absl::StartsWith(line, task + " ")) continue;
    const size_t at = line.find("| pid=");
    int pid = 0;
    if (at != absl::string_view::npos &&
        absl::SimpleAtoi(line.substr(at + 6), &pid)) {
      return pid;
    }
  }
  return 0;
}

bool Gone(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

// Waits for `count` "pid=" lines.
std::vector<pid_t> WaitForPids(const Subprocess& local, size_t count) {
  const auto deadline = std::chrono::steady_clock::now() + kTimeout;
  std::vector<pid_t> pids;
  while ((pids = PrintedPids(local.Output())).size() < count &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pids;
}

TEST(DistflowLocalTest, RunsTheSeedJobToTheEndWithPrefixedLines) {
  Subprocess local({Binary("distflow"), "local", "--ps=1", "--workers=1", "--",
                    Binary("between_graph_matmul"), "--steps=5"});
  auto code = local.Wait(kTimeout);
  ASSERT_TRUE(code.has_value()) << "distflow local hung: " << local.Output();
  EXPECT_EQ(*code, 0) << local.Output();
  int products = 0;
  for (absl::string_view line : absl::StrSplit(local.Output(), '\n')) {
    products += line == "worker0 | [[20]]";
  }
  EXPECT_EQ(products, 5) << local.Output();
  EXPECT_THAT(local.Output(), HasSubstr("distflow local: ps0 127.0.0.1:"));
  // The ps task ended by itself: nothing was stopped.
  EXPECT_THAT(local.Output(), Not(HasSubstr("stopping")));
}

// Seed 000 with two workers: the second waits for the chief's initialization
// and stops when the chief ends the job.
TEST(DistflowLocalTest, RunsTheSeedJobOnTwoWorkers) {
  Subprocess local({Binary("distflow"), "local", "--ps=1", "--workers=2", "--",
                    Binary("between_graph_matmul"), "--steps=50"});
  auto code = local.Wait(kTimeout);
  ASSERT_TRUE(code.has_value()) << "distflow local hung: " << local.Output();
  EXPECT_EQ(*code, 0) << local.Output();
  EXPECT_THAT(local.Output(), HasSubstr("worker0 | [[20]]"));
  EXPECT_THAT(local.Output(), Not(HasSubstr("error")));
  EXPECT_THAT(local.Output(), Not(HasSubstr("stopping")));
}

// The Fashion-MNIST trainer on a small budget: every task exits by itself
// and the chief reports its accuracy.
std::vector<std::string> LocalFashionMnist(std::vector<std::string> flags) {
  std::vector<std::string> argv = {Binary("distflow"), "local"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  for (const char* arg : {"--", DISTFLOW_BIN_DIR "/fashion_mnist",
                          "--model=mlp", "--batch_size=50", "--train_steps=200",
                          "--log_every=50", "--threads=1"}) {
    argv.push_back(arg);
  }
  return argv;
}

TEST(DistflowLocalTest, TrainsFashionMnistOnOnePsAndTwoWorkers) {
  Subprocess local(LocalFashionMnist({"--ps=1", "--workers=2"}));
  auto code = local.Wait(kTimeout);
  ASSERT_TRUE(code.has_value()) << "distflow local hung: " << local.Output();
  EXPECT_EQ(*code, 0) << local.Output();
  const std::string out = local.Output();
  // Every worker reports how it stopped; a progress line from each is not
  // guaranteed, since fast steps let the chief finish before the other joins.
  EXPECT_THAT(out, HasSubstr("worker0 | progress step="));
  EXPECT_THAT(out, ContainsRegex("worker1 \\| [^\n]*stopped at global_step="));
  EXPECT_THAT(out, HasSubstr("worker0 | test_accuracy=0."));
  EXPECT_THAT(out, HasSubstr("ps0     | "));
  EXPECT_THAT(out, Not(HasSubstr("distflow local: stopping"))) << out;
}

TEST(DistflowLocalTest, TrainsFashionMnistWithAChiefFromTfConfig) {
  Subprocess local(LocalFashionMnist({"--ps=1", "--workers=1", "--chief"}));
  auto code = local.Wait(kTimeout);
  ASSERT_TRUE(code.has_value()) << "distflow local hung: " << local.Output();
  EXPECT_EQ(*code, 0) << local.Output();
  EXPECT_THAT(local.Output(), HasSubstr("chief   | test_accuracy=0."));
  EXPECT_THAT(local.Output(),
              ContainsRegex("worker0 \\| [^\n]*stopped at global_step="));
}

TEST(DistflowLocalTest, GivesEachTaskItsFlagsAndTfConfig) {
  Subprocess local(LocalShell({"--ps=1", "--workers=2"},
                              "echo \"args=$*\"; echo \"tf=$TF_CONFIG\""));
  auto code = local.Wait(kTimeout);
  ASSERT_TRUE(code.has_value()) << local.Output();
  EXPECT_EQ(*code, 0) << local.Output();
  const std::string out = local.Output();
  EXPECT_THAT(out, HasSubstr("worker1 | args=--job_name=worker --task_index=1 "
                             "--ps_hosts=127.0.0.1:"));
  EXPECT_THAT(out,
              HasSubstr("ps0     | tf={\"cluster\":{\"ps\":[\"127.0.0.1:"));
  EXPECT_THAT(out, HasSubstr("\"task\":{\"index\":1,\"type\":\"worker\"}}"));
}

TEST(DistflowLocalTest, ChiefJobGetsTfConfigOnly) {
  Subprocess local(LocalShell({"--ps=1", "--workers=1", "--chief"},
                              "echo \"args=$*\"; echo \"tf=$TF_CONFIG\""));
  auto code = local.Wait(kTimeout);
  ASSERT_TRUE(code.has_value()) << local.Output();
  EXPECT_EQ(*code, 0) << local.Output();
  EXPECT_THAT(local.Output(), HasSubstr("chief   | args=\n"));
  EXPECT_THAT(local.Output(),
              HasSubstr("\"task\":{\"index\":0,\"type\":\"chief\"}}"));
}

TEST(DistflowLocalTest, ReportsAFailedTaskWithItsExitCodeAndLastLines) {
  Subprocess local(
      LocalShell({"--ps=1", "--workers=2"},
                 "echo pid=$$; case \"$*\" in *task_index=1*) sleep 0.3; "
                 "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo line $i; done; "
                 "echo 'shape [3,4] does not match [4]' >&2; exit 3;; esac; "
                 "exec sleep 30"));
  auto code = local.Wait(kTimeout);
  ASSERT_TRUE(code.has_value()) << local.Output();
  EXPECT_EQ(*code, 3) << local.Output();
  const std::string out = local.Output();
  EXPECT_THAT(out, HasSubstr(") failed with exit code 3; its last 10 lines:\n"
                             "  worker1 | line 4\n"));
  EXPECT_THAT(out, HasSubstr("  worker1 | shape [3,4] does not match [4]\n"
                             "distflow local: stopping the other tasks"));
  EXPECT_THAT(out, HasSubstr("distflow local: worker1 (pid "));
  // The others were stopped with SIGTERM, not left running for 30 s.
  const std::vector<pid_t> pids = PrintedPids(out);
  EXPECT_EQ(pids.size(), 3) << out;
  for (pid_t pid : pids) EXPECT_TRUE(Gone(pid)) << pid;
}

TEST(DistflowLocalTest, NamesTheSignalThatKilledATask) {
  Subprocess local(LocalShell({"--ps=1", "--workers=2"},
                              "case \"$*\" in *job_name=worker*task_index=0*) "
                              "echo about to crash; kill -SEGV $$;; esac; "
                              "exec sleep 30"));
  auto code = local.Wait(kTimeout);
  ASSERT_TRUE(code.has_value()) << local.Output();
  EXPECT_EQ(*code, 128 + SIGSEGV) << local.Output();
  EXPECT_THAT(local.Output(),
              HasSubstr(") failed with signal SIGSEGV; its last line:\n"
                        "  worker0 | about to crash\n"));
}

TEST(DistflowLocalTest, CtrlCStopsEveryTaskAndExits130) {
  // ps0 and worker0 end on SIGTERM; worker1 ignores it, so it needs the
  // SIGKILL after the grace period.
  Subprocess local(LocalShell(
      {"--ps=1", "--workers=2", "--grace_period=1"},
      "case \"$*\" in *task_index=1*) trap '' TERM; echo pid=$$; "
      "exec sleep 60;; esac; "
      "trap 'echo got SIGTERM; exit 0' TERM; echo pid=$$; sleep 60 & wait"));
  const std::vector<pid_t> pids = WaitForPids(local, 3);
  ASSERT_EQ(pids.size(), 3) << local.Output();
  for (pid_t pid : pids) ASSERT_FALSE(Gone(pid));
  kill(local.pid(), SIGINT);
  auto code = local.Wait(std::chrono::seconds(20));
  ASSERT_TRUE(code.has_value()) << "did not stop: " << local.Output();
  EXPECT_EQ(*code, 130) << local.Output();
  EXPECT_THAT(local.Output(), HasSubstr("SIGINT: stopping all tasks"));
  EXPECT_THAT(local.Output(), HasSubstr("ps0     | got SIGTERM"));
  EXPECT_THAT(local.Output(), HasSubstr("worker0 | got SIGTERM"));
  EXPECT_THAT(local.Output(),
              HasSubstr("killing worker1 (pid " +
                        std::to_string(PidOf(local.Output(), "worker1")) +
                        ") as it did not stop within 1 s of SIGTERM"));
  for (pid_t pid : pids) EXPECT_TRUE(Gone(pid)) << "orphan " << pid;
}

TEST(DistflowLocalTest, ExitsWithTheChiefsStatus) {
  // Every task exits by itself; the chief (worker0) with 4.
  Subprocess local(LocalShell(
      {"--ps=1", "--workers=2"},
      "case \"$*\" in *job_name=worker*task_index=0*) sleep 0.2; exit 4;; "
      "esac; exit 0"));
  auto code = local.Wait(kTimeout);
  ASSERT_TRUE(code.has_value()) << local.Output();
  EXPECT_EQ(*code, 4) << local.Output();
  EXPECT_THAT(local.Output(), HasSubstr("worker0 (pid "));
}

TEST(DistflowLocalTest, StopsPsTasksThatOutliveTheWorkers) {
  // The ps task never ends by itself; the job is still a success.
  Subprocess local(LocalShell(
      {"--ps=1", "--workers=1", "--ps_wait=0.5"},
      "case \"$*\" in *job_name=ps*) echo pid=$$; exec sleep 60;; esac; "
      "echo trained"));
  auto code = local.Wait(kTimeout);
  ASSERT_TRUE(code.has_value()) << local.Output();
  EXPECT_EQ(*code, 0) << local.Output();
  EXPECT_THAT(local.Output(),
              HasSubstr("ps0 still running 0.5 s after the workers finished"));
  const std::vector<pid_t> pids = PrintedPids(local.Output());
  ASSERT_EQ(pids.size(), 1) << local.Output();
  EXPECT_TRUE(Gone(pids[0]));
}

TEST(DistflowLocalTest, ShowsProgressLinesOfTheChief) {
  Subprocess local(LocalShell(
      {"--ps=0", "--workers=1"},
      "echo progress step=10/20 loss=0.5 examples_per_sec=100; echo done"));
  auto code = local.Wait(kTimeout);
  ASSERT_TRUE(code.has_value()) << local.Output();
  EXPECT_EQ(*code, 0) << local.Output();
  // Off a terminal the line is printed as it is.
  EXPECT_THAT(local.Output(),
              HasSubstr("worker0 | progress step=10/20 loss=0.5 "
                        "examples_per_sec=100\nworker0 | done\n"));
}

TEST(DistflowLocalTest, DrawsOneStatusLineOnATerminal) {
  // script(1) gives distflow a terminal as its stdout.
  const std::string command = absl::StrCat(
      Binary("distflow"),
      " local --ps=0 --workers=1 -- /bin/sh -c 'for s in 1 2 3; do echo "
      "progress step=$s/4 loss=0.$s; sleep 0.1; done; echo finished' sh");
  Subprocess local({"/usr/bin/script", "-qec", command, "/dev/null"});
  auto code = local.Wait(kTimeout);
  ASSERT_TRUE(code.has_value()) << local.Output();
  EXPECT_EQ(*code, 0) << local.Output();
  const std::string out = local.Output();
  // The status line is redrawn in place, and the progress lines themselves
  // are not printed.
  EXPECT_THAT(out, HasSubstr("\r\033[K"));
  EXPECT_THAT(out, HasSubstr("worker0  step 3/4 (75%)  loss 0.3000"));
  EXPECT_THAT(out, Not(HasSubstr("| progress")));
  EXPECT_THAT(out, HasSubstr("finished"));
}

TEST(DistflowLocalTest, ProgramThatCannotRunIsNamed) {
  Subprocess local(
      {Binary("distflow"), "local", "--", "/nonexistent/trainer", "--x=1"});
  auto code = local.Wait(kTimeout);
  ASSERT_TRUE(code.has_value()) << local.Output();
  EXPECT_EQ(*code, 1) << local.Output();
  EXPECT_THAT(local.Output(),
              HasSubstr("cannot start ps0: cannot run '/nonexistent/trainer': "
                        "No such file or directory"));
}

TEST(DistflowLocalTest, BadFlagsAreUsageErrors) {
  Subprocess no_program({Binary("distflow"), "local", "--ps=1"});
  auto code = no_program.Wait(kTimeout);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 2) << no_program.Output();
  EXPECT_THAT(no_program.Output(), HasSubstr("program is required"));
  Subprocess no_workers(
      {Binary("distflow"), "local", "--workers=0", "--", "/bin/true"});
  code = no_workers.Wait(kTimeout);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 2) << no_workers.Output();
  EXPECT_THAT(no_workers.Output(), HasSubstr("--workers"));
}

}  // namespace
}  // namespace distflow
