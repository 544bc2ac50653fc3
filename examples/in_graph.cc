// Seed 003 in C++: in-graph replication. One client builds one graph whose
// variables live on two ps tasks and whose compute runs on two workers, and
// runs it through a session to grpc://<worker 1>.
//
// Every task runs the same binary; the client is --job_name=client:
//   in_graph --job_name=ps --task_index=0 --ps_hosts=h:1,h:2
//   --worker_hosts=h:3,h:4
//   ... (ps 1, worker 0, worker 1 likewise)
//   in_graph --job_name=client --ps_hosts=h:1,h:2 --worker_hosts=h:3,h:4
// The client prints the result and tells every task to exit.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "distflow/distflow.h"
#include "example_util.h"

namespace df = distflow;
using examples::Fail;

int RunClient(const df::ClusterSpec& cluster) {
  df::Scope root = df::Scope::NewRootScope();
  df::ops::Variable a(root.WithDevice("/job:ps/task:0").WithOpName("a"),
                      df::Tensor::Matrix<float>({{1, 2}, {3, 4}}));
  df::ops::Variable b(root.WithDevice("/job:ps/task:1").WithOpName("b"),
                      df::Tensor::Matrix<float>({{5, 6}, {7, 8}}));
  // Two replicas of the compute, one per worker, on the shared variables.
  df::Output y0 = df::ops::MatMul(
      root.WithDevice("/job:worker/task:0").WithOpName("y0"), a, b);
  df::Output y1 = df::ops::MatMul(
      root.WithDevice("/job:worker/task:1").WithOpName("y1"), b, a);
  df::Output sum = df::ops::Add(
      root.WithDevice("/job:worker/task:1").WithOpName("sum"), y0, y1);
  df::Operation init = df::ops::GlobalVariablesInitializer(root);

  const std::vector<std::string>& workers = cluster.tasks("worker");
  df::SessionOptions options;
  options.target = "grpc://" + workers[workers.size() > 1 ? 1 : 0];
  // The tasks may still be starting: retry until their servers answer.
  std::unique_ptr<df::ClientSession> session;
  absl::Status s = examples::RetryWhileUnavailable(
      [&] {
        if (session == nullptr) {
          auto created = df::ClientSession::Create(root, options);
          if (!created.ok()) return created.status();
          session = std::move(*created);
        }
        return session->RunTargets({init});
      },
      60);
  if (!s.ok()) return Fail(s);
  // Worker 0 may start last: its first step also waits for it.
  absl::StatusOr<std::vector<df::Tensor>> out;
  s = examples::RetryWhileUnavailable(
      [&] {
        out = session->Run({sum});
        return out.status();
      },
      60);
  if (!s.ok()) return Fail(s);
  std::cout << (*out)[0].DebugString() << std::endl;
  (void)session->Close();
  for (const std::string& job : cluster.jobs()) {
    for (const std::string& address : cluster.tasks(job)) {
      if (absl::Status s = df::ShutdownTask(address); !s.ok()) return Fail(s);
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  if (examples::FlagValue(args, "--job_name", "") == "client") {
    auto cluster = df::ClusterSpec::FromHostLists(
        examples::FlagValue(args, "--ps_hosts", ""),
        examples::FlagValue(args, "--worker_hosts", ""));
    if (!cluster.ok()) return Fail(cluster.status());
    return RunClient(*cluster);
  }
  auto task = df::ParseTaskConfig(argc, argv);
  if (!task.ok()) return Fail(task.status());
  auto server =
      df::Server::Create(task->cluster, task->job_name, task->task_index);
  if (!server.ok()) return Fail(server.status());
  return (*server)->Join().ok() ? 0 : 1;
}
