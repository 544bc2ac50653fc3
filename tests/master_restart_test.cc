// A client whose master is another process (a session with target
// grpc://host:port of a task it does not run): that task is killed with
// SIGKILL and started again on its port, and its sessions are gone. A plain
// session must say so, naming the master; a monitored training session must
// create its session again on the restarted master and train to its last
// step. Real processes on 127.0.0.1: the master's task is `distflow server`,
// the client and the ps task are recovery_trainer.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "distflow/distflow.h"
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

// Generous: the machine running the tests may be loaded.
constexpr auto kTimeout = std::chrono::seconds(60);

// Whether a TCP connection to 127.0.0.1:port succeeds: the restarted task
// is listening.
bool Listening(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok =
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

bool WaitUntilListening(int port) {
  const auto deadline = std::chrono::steady_clock::now() + kTimeout;
  while (!Listening(port)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// The master's task: a worker task that only serves (its master and worker
// services), as `distflow server` runs it.
std::unique_ptr<Subprocess> StartMasterTask(const std::string& ps_hosts,
                                            const std::string& worker_hosts,
                                            int task_index = 0) {
  std::vector<std::string> argv = {absl::StrCat(DISTFLOW_BIN_DIR, "/distflow"),
                                   "server", "--job_name=worker",
                                   absl::StrCat("--task_index=", task_index),
                                   "--worker_hosts=" + worker_hosts};
  if (!ps_hosts.empty()) argv.push_back("--ps_hosts=" + ps_hosts);
  return std::make_unique<Subprocess>(argv);
}

TEST(MasterRestartTest, PlainSessionErrorNamesTheMasterAndTheRestart) {
  const int port = PickFreePort();
  const std::string address = absl::StrCat("127.0.0.1:", port);
  auto master = StartMasterTask("", address);
  ASSERT_TRUE(WaitUntilListening(port)) << master->Output();

  Scope root = Scope::NewRootScope();
  Output sum = ops::Add(root, ops::Const(root, 1.0f), ops::Const(root, 2.0f));
  SessionOptions options;
  options.target = "grpc://" + address;
  auto session = ClientSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  auto out = (*session)->Run({sum});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 3.0f);

  master->Kill();
  master = StartMasterTask("", address);
  ASSERT_TRUE(WaitUntilListening(port)) << master->Output();
  // The channel may need a moment to reconnect to the new process.
  const auto deadline = std::chrono::steady_clock::now() + kTimeout;
  do {
    out = (*session)->Run({sum});
  } while (absl::IsUnavailable(out.status()) &&
           std::chrono::steady_clock::now() < deadline);
  ASSERT_FALSE(out.ok());
  // ABORTED, as TensorFlow's master says for a session it does not know.
  EXPECT_TRUE(absl::IsAborted(out.status())) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr(address));
  EXPECT_THAT(out.status().message(), HasSubstr("lost this session"));
  EXPECT_THAT(out.status().message(), HasSubstr("task restarted"));
  EXPECT_THAT(out.status().message(), HasSubstr("create a new session"));

  // A new session on the same target works.
  auto fresh = ClientSession::Create(root, options);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  out = (*fresh)->Run({sum});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 3.0f);
}

// A training client (recovery_trainer --master) whose master's task is killed
// and restarted between two of its steps.
class ClientOfRemoteMaster {
 public:
  // With `num_ps` ps tasks (0: the variables live on the master's task).
  explicit ClientOfRemoteMaster(int num_ps) {
    master_port_ = PickFreePort();
    worker_hosts_ = absl::StrCat("127.0.0.1:", master_port_);
    for (int i = 0; i < num_ps; ++i) {
      absl::StrAppend(&ps_hosts_, i > 0 ? "," : "",
                      "127.0.0.1:", PickFreePort());
    }
    dir_ = ::testing::TempDir() + "master_restart_test_XXXXXX";
    if (mkdtemp(dir_.data()) == nullptr) dir_.clear();
    pause_file_ = dir_ + "/go";
    for (int i = 0; i < num_ps; ++i)
      ps_.push_back(
          Trainer({"--job_name=ps", absl::StrCat("--task_index=", i)}));
    master_ = StartMasterTask(ps_hosts_, worker_hosts_);
  }

  // Trains to `last_step`, pausing after global step `pause_at`.
  void StartClient(int last_step, int pause_at) {
    client_ = Trainer(
        {"--job_name=worker", "--task_index=0", "--master=" + worker_hosts_,
         absl::StrCat("--last_step=", last_step), "--save_checkpoint_steps=10",
         "--step_delay_ms=5", absl::StrCat("--pause_at_step=", pause_at),
         "--pause_file=" + pause_file_});
  }

  // Kills the master's task while the client is paused, starts it again on
  // its port, and lets the client go on once it listens: the client's next
  // step reaches the new process with the old session's handle.
  void RestartMasterBetweenSteps() {
    ASSERT_TRUE(WaitForOutput(*client_, "worker:0 paused")) << AllOutput();
    master_->Kill();
    killed_ = std::move(master_);
    master_ = StartMasterTask(ps_hosts_, worker_hosts_);
    ASSERT_TRUE(WaitUntilListening(master_port_)) << AllOutput();
    std::ofstream(pause_file_) << "go\n";
  }

  Subprocess& client() { return *client_; }
  std::vector<std::unique_ptr<Subprocess>>& ps() { return ps_; }

  std::string AllOutput() const {
    std::string all;
    for (const auto& ps : ps_) absl::StrAppend(&all, "--- ps:\n", ps->Output());
    absl::StrAppend(&all, "--- master:\n", master_->Output());
    if (client_) absl::StrAppend(&all, "--- client:\n", client_->Output());
    return all;
  }

 private:
  static bool WaitForOutput(const Subprocess& task, const std::string& text) {
    const auto deadline = std::chrono::steady_clock::now() + kTimeout;
    while (task.Output().find(text) == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

  std::unique_ptr<Subprocess> Trainer(std::vector<std::string> flags) {
    std::vector<std::string> argv = {
        absl::StrCat(DISTFLOW_BIN_DIR, "/recovery_trainer"),
        "--worker_hosts=" + worker_hosts_, "--checkpoint_dir=" + dir_};
    if (!ps_hosts_.empty()) argv.push_back("--ps_hosts=" + ps_hosts_);
    argv.insert(argv.end(), flags.begin(), flags.end());
    return std::make_unique<Subprocess>(argv);
  }

  int master_port_ = 0;
  std::string ps_hosts_, worker_hosts_, dir_, pause_file_;
  std::vector<std::unique_ptr<Subprocess>> ps_;
  std::unique_ptr<Subprocess> master_, killed_, client_;
};

// The variables live on a ps task that kept running: the client's monitored
// session is created again on the restarted master, the chief finds the model
// ready (no roll-back to a checkpoint), and training goes on to its last step;
// the ps task exits by itself once the chief ends the job.
TEST(MasterRestartTest, MonitoredSessionRecoversOnTheRestartedMaster) {
  ClientOfRemoteMaster job(/*num_ps=*/1);
  job.StartClient(/*last_step=*/120, /*pause_at=*/40);
  job.RestartMasterBetweenSteps();
  auto code = job.client().Wait(kTimeout);
  ASSERT_TRUE(code.has_value()) << "the client hung:\n" << job.AllOutput();
  EXPECT_EQ(*code, 0) << job.AllOutput();
  const std::string out = job.client().Output();
  EXPECT_THAT(out, HasSubstr("Recovering the monitored session from: "
                             "ABORTED: the master at"));
  EXPECT_THAT(out, HasSubstr("lost this session because its task restarted"));
  EXPECT_THAT(out, HasSubstr("found the model ready"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("restored checkpoint")));
  EXPECT_THAT(out, HasSubstr("worker:0 done (recoveries: 1)"));
  const std::vector<int64_t> steps = GlobalSteps(out);
  ASSERT_FALSE(steps.empty()) << out;
  EXPECT_GE(steps.back(), 120) << out;
  // Never rolled back: the steps only go up.
  EXPECT_TRUE(std::is_sorted(steps.begin(), steps.end())) << out;
  auto ps_code = job.ps()[0]->Wait(kTimeout);
  ASSERT_TRUE(ps_code.has_value()) << "the ps did not exit:\n"
                                   << job.AllOutput();
  EXPECT_EQ(*ps_code, 0) << job.AllOutput();
}

// No ps task: the variables lived on the master's task and died with it. The
// chief restores the latest checkpoint on the restarted task and training
// resumes right after it.
TEST(MasterRestartTest, MonitoredSessionRestoresWhenTheModelDiedWithTheMaster) {
  ClientOfRemoteMaster job(/*num_ps=*/0);
  job.StartClient(/*last_step=*/120, /*pause_at=*/45);
  job.RestartMasterBetweenSteps();
  auto code = job.client().Wait(kTimeout);
  ASSERT_TRUE(code.has_value()) << "the client hung:\n" << job.AllOutput();
  EXPECT_EQ(*code, 0) << job.AllOutput();
  const std::string out = job.client().Output();
  EXPECT_THAT(out, HasSubstr("lost this session because its task restarted"));
  const size_t restored = out.find("Chief restored checkpoint");
  ASSERT_NE(restored, std::string::npos) << out;
  // Checkpoints every 10 steps: the one of step 40 (or later) was restored,
  // and the steps after the restore start right after it.
  const std::vector<int64_t> after = GlobalSteps(out.substr(restored));
  ASSERT_FALSE(after.empty()) << out;
  EXPECT_GE(after.front(), 41) << out;
  EXPECT_LE(after.front(), 47) << out;
  EXPECT_GE(after.back(), 120) << out;
  EXPECT_THAT(out, HasSubstr("worker:0 done (recoveries: 1)"));
}

// A worker (not the chief) waits for the model; meanwhile its master's task
// is killed and restarted, so the session it polls the ready op with is lost.
// It must create its session again, and join once the chief has initialized
// the model, rather than poll the lost session until max_wait_secs.
TEST(MasterRestartTest, WaitingWorkerSurvivesARestartOfItsMaster) {
  const std::string ps_hosts = absl::StrCat("127.0.0.1:", PickFreePort());
  const int port = PickFreePort();
  const std::string master_address = absl::StrCat("127.0.0.1:", port);
  const std::string worker_hosts =
      absl::StrCat("127.0.0.1:", PickFreePort(), ",", master_address);
  std::string dir = ::testing::TempDir() + "master_restart_wait_XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  auto trainer = [&](std::vector<std::string> flags) {
    std::vector<std::string> argv = {
        absl::StrCat(DISTFLOW_BIN_DIR, "/recovery_trainer"),
        "--ps_hosts=" + ps_hosts,
        "--worker_hosts=" + worker_hosts,
        "--checkpoint_dir=" + dir,
        "--last_step=60",
        "--step_delay_ms=5",
        "--max_wait_secs=30"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return std::make_unique<Subprocess>(argv);
  };
  auto ps = trainer({"--job_name=ps", "--task_index=0"});
  auto master = StartMasterTask(ps_hosts, worker_hosts, /*task_index=*/1);
  ASSERT_TRUE(WaitUntilListening(port)) << master->Output();
  auto waiting = trainer(
      {"--job_name=worker", "--task_index=1", "--master=" + master_address});
  auto in_output = [](const Subprocess& task, const std::string& text) {
    const auto deadline = std::chrono::steady_clock::now() + kTimeout;
    while (task.Output().find(text) == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  };
  ASSERT_TRUE(in_output(*waiting, "waiting for the chief"))
      << waiting->Output();
  master->Kill();
  master = StartMasterTask(ps_hosts, worker_hosts, /*task_index=*/1);
  ASSERT_TRUE(WaitUntilListening(port)) << master->Output();
  // Let the waiting worker poll the new master before the model is ready.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  auto chief = trainer({"--job_name=worker", "--task_index=0"});
  for (Subprocess* task : {waiting.get(), chief.get(), ps.get()}) {
    auto code = task->Wait(kTimeout);
    ASSERT_TRUE(code.has_value()) << "a task hung:\n" << task->Output();
    EXPECT_EQ(*code, 0) << task->Output();
  }
  EXPECT_THAT(waiting->Output(), HasSubstr("worker:1 done"));
  EXPECT_FALSE(GlobalSteps(waiting->Output()).empty()) << waiting->Output();
}

}  // namespace
}  // namespace distflow
