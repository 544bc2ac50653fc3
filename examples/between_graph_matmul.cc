// Seed 000 in C++: between-graph replication with one ps and one worker.
//
//   between_graph_matmul --job_name=ps --task_index=0
//       --ps_hosts=localhost:2223 --worker_hosts=localhost:2222
//   between_graph_matmul --job_name=worker --task_index=0
//       --ps_hosts=localhost:2223 --worker_hosts=localhost:2222 [--steps=200]
//
// The ps task serves until the job is done. The worker places the variables
// x and w on the ps task with the replica device setter, computes their
// product on itself and prints [[20]] each step (other workers first wait
// until the chief has initialized the variables); when done, the chief worker
// ends the job (EndJob): each ps task refuses new steps and exits once none
// runs on it. Another worker whose step is refused (OUT_OF_RANGE) because the
// job has ended stops there. (examples/fashion_mnist also makes the chief
// wait for the other workers before it ends the job.)
#include <cstdint>
#include <iostream>
#include <string>

#include "distflow/distflow.h"
#include "example_util.h"

namespace df = distflow;
using examples::Fail;

int main(int argc, char** argv) {
  auto task = df::ParseTaskConfig(argc, argv);
  if (!task.ok()) return Fail(task.status());
  auto steps = examples::PositiveIntFlag(task->remaining_args, "--steps", 200);
  if (!steps.ok()) return Fail(steps.status());
  auto server =
      df::Server::Create(task->cluster, task->job_name, task->task_index);
  if (!server.ok()) return Fail(server.status());
  if (task->job_name == "ps") return (*server)->Join().ok() ? 0 : 1;

  const std::string worker_device =
      "/job:worker/task:" + std::to_string(task->task_index);
  df::Scope root = df::Scope::NewRootScope();
  df::Scope s = root.WithDeviceFunction(
      df::ReplicaDeviceSetter(task->cluster, worker_device));
  df::ops::Variable x(s.WithOpName("x"),
                      df::Tensor::Matrix<int32_t>({{1, 2, 3, 4}}));
  df::ops::Variable w(s.WithOpName("w"),
                      df::Tensor::Matrix<int32_t>({{2}, {2}, {2}, {2}}));
  df::Output product = df::ops::MatMul(s.WithOpName("product"), x, w);
  df::Operation init = df::ops::GlobalVariablesInitializer(root);

  df::SessionOptions options;
  options.target = (*server)->target();
  auto session = df::ClientSession::Create(root, options);
  if (!session.ok()) return Fail(session.status());
  if (task->is_chief) {
    // The ps task may still be starting.
    absl::Status s = examples::RetryWhileUnavailable(
        [&] { return (*session)->RunTargets({init}); }, 60);
    if (!s.ok()) return Fail(s);
  }
  if (!task->is_chief) {
    // Wait until the chief has initialized x and w.
    absl::Status ready = examples::RetryWhileNotReady(
        [&] { return (*session)->Run({product}).status(); }, 60);
    if (absl::IsOutOfRange(ready)) return 0;  // the job is already over
    if (!ready.ok()) return Fail(ready);
  }
  for (int step = 0; step < *steps; ++step) {
    auto out = (*session)->Run({product});
    if (absl::IsOutOfRange(out.status())) break;  // the chief ended the job
    if (!out.ok()) return Fail(out.status());
    std::cout << (*out)[0].DebugString() << std::endl;
  }
  (void)(*session)->Close();
  if (task->is_chief) {
    if (absl::Status s = df::EndJob(task->cluster); !s.ok()) return Fail(s);
  }
  return 0;
}
