// A cluster of one ps task, run by `distflow server` in a child process, and
// one worker task served in the test's own process: the setting of tests
// that kill, freeze or inspect a task that is really another process.
#ifndef DISTFLOW_TESTS_PS_PROCESS_H_
#define DISTFLOW_TESTS_PS_PROCESS_H_

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "distflow/distflow.h"
#include "gtest/gtest.h"
#include "subprocess.h"

namespace distflow {
namespace testing {

struct PsProcessAndWorker {
  std::string ps_address;
  std::unique_ptr<Subprocess> ps;
  std::unique_ptr<Server> worker;
};

// Starts both tasks (the ps may still be starting when this returns). A
// failure fails the calling test; check HasFatalFailure() after the call.
inline void StartPsProcessAndWorker(PsProcessAndWorker* tasks) {
  tasks->ps_address = absl::StrCat("127.0.0.1:", PickFreePort());
  const std::string worker_address = absl::StrCat("127.0.0.1:", PickFreePort());
  auto cluster = ClusterSpec::FromHostLists(tasks->ps_address, worker_address);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  tasks->ps = std::make_unique<Subprocess>(std::vector<std::string>{
      absl::StrCat(DISTFLOW_BIN_DIR, "/distflow"), "server", "--job_name=ps",
      "--task_index=0", "--ps_hosts=" + tasks->ps_address,
      "--worker_hosts=" + worker_address});
  ASSERT_TRUE(tasks->ps->started());
  auto server = Server::Create(*cluster, "worker", 0);
  ASSERT_TRUE(server.ok()) << server.status();
  tasks->worker = std::move(*server);
}

// A session on the worker for `root`'s graph, returned once a step running
// `probe` (a target with a part on the ps) succeeds: the ps process may take
// a while to start on a loaded machine. Fails the calling test after 60 s.
inline void SessionOnceThePsIsUp(const Scope& root,
                                 const PsProcessAndWorker& tasks,
                                 const Operation& probe,
                                 std::unique_ptr<ClientSession>* session) {
  SessionOptions options;
  options.target = tasks.worker->target();
  auto created = ClientSession::Create(root, options);
  ASSERT_TRUE(created.ok()) << created.status();
  *session = std::move(*created);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  absl::Status up;
  do {
    up = (*session)->RunTargets({probe});
    if (!up.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (!up.ok() && std::chrono::steady_clock::now() < deadline);
  ASSERT_EQ(up, absl::OkStatus()) << tasks.ps->Output();
}

}  // namespace testing
}  // namespace distflow

#endif  // DISTFLOW_TESTS_PS_PROCESS_H_
