// Model parallelism: the two layers of a network run on two different worker
// tasks, their weights on the ps task.
//
//   model_parallel --job_name=ps --task_index=0 --ps_hosts=h:1
//   --worker_hosts=h:2,h:3 model_parallel --job_name=worker --task_index=1 ...
//   (serves layer 2) model_parallel --job_name=worker --task_index=0 ...   (the
//   client: layer 1)
//
// Worker 0 builds the graph, runs it through its own master, prints the
// output and tells the other tasks to exit.
#include <iostream>
#include <string>

#include "distflow/distflow.h"
#include "example_util.h"

namespace df = distflow;
using examples::Fail;

int main(int argc, char** argv) {
  auto task = df::ParseTaskConfig(argc, argv);
  if (!task.ok()) return Fail(task.status());
  auto server =
      df::Server::Create(task->cluster, task->job_name, task->task_index);
  if (!server.ok()) return Fail(server.status());
  if (task->job_name != "worker" || task->task_index != 0) {
    return (*server)->Join().ok() ? 0 : 1;
  }

  df::Scope root = df::Scope::NewRootScope();
  df::Scope ps = root.WithDevice("/job:ps/task:0");
  df::Scope layer1 = root.WithDevice("/job:worker/task:0");
  df::Scope layer2 = root.WithDevice("/job:worker/task:1");
  df::Output x =
      df::ops::Placeholder(root.WithOpName("x"), df::DataType::kFloat);
  df::ops::Variable w1(ps.WithOpName("w1"),
                       df::Tensor::Matrix<float>({{1, 0, 1}, {0, 1, 1}}));
  df::ops::Variable b1(ps.WithOpName("b1"),
                       df::Tensor::Matrix<float>({{0, 0, 1}}));
  df::ops::Variable w2(ps.WithOpName("w2"),
                       df::Tensor::Matrix<float>({{1}, {2}, {3}}));
  df::Output h =
      df::ops::Add(layer1.WithOpName("h"), df::ops::MatMul(layer1, x, w1), b1);
  df::Output y = df::ops::MatMul(layer2.WithOpName("y"), h, w2);
  df::Operation init = df::ops::GlobalVariablesInitializer(root);

  df::SessionOptions options;
  options.target = (*server)->target();
  auto session = df::ClientSession::Create(root, options);
  if (!session.ok()) return Fail(session.status());
  absl::Status s = examples::RetryWhileUnavailable(
      [&] { return (*session)->RunTargets({init}); }, 60);
  if (!s.ok()) return Fail(s);
  // x = [[1, 2]]: h = [[1, 2, 4]], y = [[1 + 4 + 12]] = [[17]].
  // Worker 1 (layer 2) may still be starting: the first step waits for it.
  absl::StatusOr<std::vector<df::Tensor>> out;
  s = examples::RetryWhileUnavailable(
      [&] {
        out = (*session)->Run({{x, df::Tensor::Matrix<float>({{1, 2}})}}, {y});
        return out.status();
      },
      60);
  if (!s.ok()) return Fail(s);
  std::cout << (*out)[0].DebugString() << std::endl;
  (void)(*session)->Close();
  for (const std::string& job : task->cluster.jobs()) {
    for (int i = 0; i < task->cluster.num_tasks(job); ++i) {
      if (job == "worker" && i == 0) continue;
      if (absl::Status s = df::ShutdownTask(task->cluster.tasks(job)[i]);
          !s.ok()) {
        return Fail(s);
      }
    }
  }
  return 0;
}
