// What a process killed with SIGKILL leaves on the tasks that outlive it,
// and how it is cleaned up. The surviving tasks run in this process, to
// count their sessions and graphs.
//  - A worker task whose master registered graphs on a ps, started again on
//    its port: once the new process registers its own, the ps holds only
//    those. Without that, every restart of a worker or chief would leave its
//    partitions on every ps for the rest of the job. The worker task is
//    `distflow server`; a client in this process runs steps through it.
//  - A client whose master is another task (recovery_trainer --master): its
//    session, and the graphs the session registered, are closed once it has
//    been silent for the master's remote_session_timeout_ms, while a live
//    client that idles keeps them.
//  - A client killed in the middle of a step that waits on the ps
//    (dequeue_client): the master aborts the step at once, so the dequeue it
//    left cannot take the next item.
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "distflow/distflow.h"
#include "distflow/ops/data_flow_ops.h"
#include "distributed/master.h"
#include "distributed/rpc/grpc_server.h"
#include "distributed/worker.h"
#include "gtest/gtest.h"
#include "subprocess.h"

namespace distflow {
namespace {

using ::distflow::testing::PickFreePort;
using ::distflow::testing::Subprocess;

// Generous: the machine running the tests may be loaded.
constexpr auto kTimeout = std::chrono::seconds(60);

class GraphCleanupProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ps_address_ = absl::StrCat("127.0.0.1:", PickFreePort());
    worker_address_ = absl::StrCat("127.0.0.1:", PickFreePort());
    auto ps = GrpcServer::Create(
        {{"ps", {ps_address_}}, {"worker", {worker_address_}}}, "ps", 0);
    ASSERT_TRUE(ps.ok()) << ps.status();
    ps_ = std::move(*ps);
  }

  std::unique_ptr<Subprocess> StartWorkerTask() {
    return std::make_unique<Subprocess>(std::vector<std::string>{
        absl::StrCat(DISTFLOW_BIN_DIR, "/distflow"), "server",
        "--job_name=worker", "--task_index=0", "--ps_hosts=" + ps_address_,
        "--worker_hosts=" + worker_address_});
  }

  // A new session on the worker's master that initializes a variable on the
  // ps and reads it from the worker, retried while the task starts. The
  // session is returned so that it stays open.
  std::unique_ptr<ClientSession> RunSteps(const Subprocess& task) {
    Scope root = Scope::NewRootScope();
    ops::Variable v(root.WithDevice("/job:ps/task:0").WithOpName("v"),
                    Tensor::Scalar<float>(3));
    Output doubled = ops::Add(root.WithOpName("doubled"), v, v);
    Operation init = ops::GlobalVariablesInitializer(root);
    SessionOptions options;
    options.target = "grpc://" + worker_address_;
    const auto deadline = std::chrono::steady_clock::now() + kTimeout;
    absl::Status last;
    while (std::chrono::steady_clock::now() < deadline) {
      auto session = ClientSession::Create(root, options);
      if (session.ok()) {
        last = (*session)->RunTargets({init});
        if (last.ok()) {
          auto out = (*session)->Run({doubled});
          last = out.status();
          if (out.ok()) {
            EXPECT_EQ((*out)[0].scalar<float>(), 6.0f);
            return std::move(*session);
          }
        }
      } else {
        last = session.status();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "no step ran within " << kTimeout.count() << " s: " << last
                  << "\n"
                  << task.Output();
    return nullptr;
  }

  std::string ps_address_, worker_address_;
  std::unique_ptr<GrpcServer> ps_;
};

TEST_F(GraphCleanupProcessTest, RestartedWorkerTaskReplacesItsGraphsOnThePs) {
  auto task = StartWorkerTask();
  ASSERT_TRUE(task->started());
  auto first = RunSteps(*task);
  ASSERT_NE(first, nullptr);
  const int registered = ps_->worker()->NumGraphs();
  ASSERT_GT(registered, 0);

  task->Kill();  // SIGKILL: its sessions never close
  EXPECT_EQ(ps_->worker()->NumGraphs(), registered);
  task = StartWorkerTask();
  ASSERT_TRUE(task->started());
  auto second = RunSteps(*task);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(ps_->worker()->NumGraphs(), registered) << task->Output();

  // And so does every later restart.
  task->Kill();
  task = StartWorkerTask();
  ASSERT_TRUE(task->started());
  auto third = RunSteps(*task);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(ps_->worker()->NumGraphs(), registered);
  // A session that closes deregisters its graphs as before.
  ASSERT_EQ(third->Close(), absl::OkStatus());
  EXPECT_EQ(ps_->worker()->NumGraphs(), 0);
}

// Waits up to `timeout` for `done`; whether it came.
template <typename Done>
bool WaitUntil(const Done& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

TEST(RemoteClientCleanupTest, KilledClientsSessionAndGraphsAreClosed) {
  const std::string ps_address = absl::StrCat("127.0.0.1:", PickFreePort());
  const std::string master_address = absl::StrCat("127.0.0.1:", PickFreePort());
  const ClusterMap cluster = {{"ps", {ps_address}},
                              {"worker", {master_address}}};
  ServerOptions options;
  options.remote_session_timeout_ms = 6000;  // keep-alives every 2 s
  auto ps = GrpcServer::Create(cluster, "ps", 0, options);
  ASSERT_TRUE(ps.ok()) << ps.status();
  auto master_task = GrpcServer::Create(cluster, "worker", 0, options);
  ASSERT_TRUE(master_task.ok()) << master_task.status();
  Master* master = (*master_task)->master();
  Worker* ps_worker = (*ps)->worker();

  std::string dir = ::testing::TempDir() + "graph_cleanup_XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  // Trains to step 20 and waits there (for a file that never comes).
  Subprocess client(
      {absl::StrCat(DISTFLOW_BIN_DIR, "/recovery_trainer"), "--job_name=worker",
       "--task_index=0", "--ps_hosts=" + ps_address,
       "--worker_hosts=" + master_address, "--master=" + master_address,
       "--checkpoint_dir=" + dir, "--last_step=1000", "--pause_at_step=20",
       "--pause_file=" + dir + "/go"});
  ASSERT_TRUE(client.started());
  client.WaitForOutput("worker:0 paused", kTimeout);
  ASSERT_NE(client.Output().find("worker:0 paused"), std::string::npos)
      << client.Output();
  const int sessions = master->NumSessions();
  EXPECT_GT(sessions, 0);
  EXPECT_GT(ps_worker->NumGraphs(), 0);

  // Idle but alive, past the timeout: it keeps what it has.
  std::this_thread::sleep_for(std::chrono::seconds(7));
  EXPECT_EQ(master->NumSessions(), sessions) << client.Output();

  client.Kill();
  EXPECT_TRUE(WaitUntil([&] { return master->NumSessions() == 0; },
                        std::chrono::seconds(15)))
      << master->NumSessions() << " sessions left";
  // The session's graphs are deregistered as it closes.
  EXPECT_TRUE(WaitUntil([&] { return ps_worker->NumGraphs() == 0; },
                        std::chrono::seconds(15)))
      << ps_worker->NumGraphs() << " graphs left on the ps";
  std::filesystem::remove_all(dir);
}

TEST(RemoteClientCleanupTest, StepOfAClientKilledMidStepIsAbortedOnThePs) {
  const std::string ps_address = absl::StrCat("127.0.0.1:", PickFreePort());
  const std::string master_address = absl::StrCat("127.0.0.1:", PickFreePort());
  const ClusterMap cluster = {{"ps", {ps_address}},
                              {"worker", {master_address}}};
  auto ps = GrpcServer::Create(cluster, "ps", 0);
  ASSERT_TRUE(ps.ok()) << ps.status();
  auto master_task = GrpcServer::Create(cluster, "worker", 0);
  ASSERT_TRUE(master_task.ok()) << master_task.status();
  Worker* ps_worker = (*ps)->worker();

  Subprocess client({absl::StrCat(DISTFLOW_BIN_DIR, "/dequeue_client"),
                     "--master=" + master_address});
  ASSERT_TRUE(client.started());
  client.WaitForOutput("dequeuing", kTimeout);
  // Its step waits on the ps for an item.
  ASSERT_TRUE(WaitUntil([&] { return ps_worker->NumSteps() > 0; },
                        std::chrono::seconds(30)))
      << client.Output();
  client.Kill();
  EXPECT_TRUE(WaitUntil([&] { return ps_worker->NumSteps() == 0; },
                        std::chrono::seconds(15)))
      << "the killed client's step still runs on the ps";

  // The next item goes to the next client that asks for one.
  Scope root = Scope::NewRootScope();
  Scope on_ps = root.WithDevice("/job:ps/task:0");
  Output queue = ops::FIFOQueue(on_ps.WithOpName("queue"), DataType::kFloat,
                                PartialTensorShape({}), "items");
  Operation enqueue = ops::QueueEnqueue(on_ps, queue, 8.0f);
  Output dequeue = ops::QueueDequeue(on_ps, queue);
  Output size = ops::QueueSize(on_ps, queue);
  SessionOptions options;
  options.target = "grpc://" + master_address;
  auto session = ClientSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_EQ((*session)->RunTargets({enqueue}), absl::OkStatus());
  EXPECT_TRUE(WaitUntil([&] { return ps_worker->NumSteps() == 0; },
                        std::chrono::seconds(15)));
  auto queued = (*session)->Run({size});
  ASSERT_TRUE(queued.ok()) << queued.status();
  ASSERT_EQ((*queued)[0].scalar<int32_t>(), 1) << "the item was taken";
  auto item = (*session)->Run({dequeue});
  ASSERT_TRUE(item.ok()) << item.status();
  EXPECT_EQ((*item)[0].scalar<float>(), 8.0f);
}

}  // namespace
}  // namespace distflow
