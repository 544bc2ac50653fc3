// A small between-graph training job for the recovery tests: a linear
// regression (y = 3x + 2 on generated points) whose variables and global step
// live on the ps tasks, trained asynchronously by every worker under a
// MonitoredTrainingSession that checkpoints and stops at a last step.
//
//   recovery_trainer --job_name=ps --task_index=0 --ps_hosts=...
//       --worker_hosts=...
//   recovery_trainer --job_name=worker --task_index=0 --ps_hosts=...
//       --worker_hosts=... --last_step=300 --checkpoint_dir=ckpt
//       --save_checkpoint_steps=50 --step_delay_ms=10
//
// Each worker prints one line per step, "worker:<i> global_step=<n>", with
// the global step just after its update, so that a test sees progress and
// which steps were done again; and "worker:<i> done" when it ends normally.
// The chief tells the ps tasks the job is done when it reaches last_step
// (EndJob); they exit with status 0 once the other workers are through.
#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "distflow/distflow.h"
#include "examples/example_util.h"

namespace df = distflow;
using examples::Fail;
using examples::FlagValue;

namespace {

// The value of an integer flag that may be 0; INVALID_ARGUMENT naming it.
absl::StatusOr<int> NonNegativeIntFlag(const std::vector<std::string>& args,
                                       const std::string& name, int fallback) {
  const std::string text = FlagValue(args, name, std::to_string(fallback));
  int value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < 0) {
    return absl::InvalidArgumentError(
        name + " must be a non-negative integer, got '" + text + "'");
  }
  return value;
}

struct Flags {
  int last_step = 0;
  int save_checkpoint_steps = 0;
  int step_delay_ms = 0;
  int max_wait_secs = 0;
  std::string checkpoint_dir;
};

absl::StatusOr<Flags> ParseFlags(const std::vector<std::string>& args) {
  Flags flags;
  auto last_step = examples::PositiveIntFlag(args, "--last_step", 200);
  if (!last_step.ok()) return last_step.status();
  auto save = NonNegativeIntFlag(args, "--save_checkpoint_steps", 0);
  if (!save.ok()) return save.status();
  auto delay = NonNegativeIntFlag(args, "--step_delay_ms", 0);
  if (!delay.ok()) return delay.status();
  auto wait = examples::PositiveIntFlag(args, "--max_wait_secs", 60);
  if (!wait.ok()) return wait.status();
  flags.last_step = *last_step;
  flags.save_checkpoint_steps = *save;
  flags.step_delay_ms = *delay;
  flags.max_wait_secs = *wait;
  flags.checkpoint_dir = FlagValue(args, "--checkpoint_dir", "");
  return flags;
}

}  // namespace

int main(int argc, char** argv) {
  auto task = df::ParseTaskConfig(argc, argv);
  if (!task.ok()) return Fail(task.status());
  auto flags = ParseFlags(task->remaining_args);
  if (!flags.ok()) return Fail(flags.status());
  auto server =
      df::Server::Create(task->cluster, task->job_name, task->task_index);
  if (!server.ok()) return Fail(server.status());
  if (task->job_name == "ps") {
    absl::Status joined = (*server)->Join();
    if (!joined.ok()) return Fail(joined);
    std::cout << "ps:" << task->task_index << " exits" << std::endl;
    return 0;
  }

  const std::string me = "worker:" + std::to_string(task->task_index);
  df::Scope root = df::Scope::NewRootScope();
  df::Scope s = root.WithDeviceFunction(df::ReplicaDeviceSetter(
      task->cluster, "/job:worker/task:" + std::to_string(task->task_index)));
  df::ops::Variable global_step = df::train::GetOrCreateGlobalStep(s);
  df::ops::Variable w(s.WithOpName("w"), 0.0f);
  df::ops::Variable b(s.WithOpName("b"), 0.0f);
  std::vector<float> xs, ys;
  for (int i = 0; i < 16; ++i) {
    xs.push_back(-1.0f + i / 7.5f);
    ys.push_back(3.0f * xs.back() + 2.0f);
  }
  df::Output x = df::ops::Const(s, df::Tensor::Vector<float>(xs));
  df::Output y = df::ops::Const(s, df::Tensor::Vector<float>(ys));
  df::Output pred = df::ops::Add(s, df::ops::Mul(s, x, w), b);
  df::Output loss = df::ops::Mean(
      s.WithOpName("loss"), df::ops::Square(s, df::ops::Sub(s, pred, y)), 0);
  df::train::GradientDescentOptimizer sgd(0.05f);
  auto train_op = sgd.Minimize(s, loss, global_step);
  if (!train_op.ok()) return Fail(train_op.status());
  // The global step just after this step's update. A variable's value flows
  // out of it when the step starts, so an Identity would show the value from
  // before the update; adding 0 (an AssignAdd, run after the train op) reads
  // it at that moment.
  df::Output step_after = df::ops::AssignAdd(
      s.WithOpName("step_after").WithControlDependencies({*train_op}),
      global_step, int64_t{0});

  df::train::MonitoredTrainingSession::Options options;
  options.master = (*server)->target();
  options.is_chief = task->is_chief;
  options.checkpoint_dir = flags->checkpoint_dir;
  options.save_checkpoint_steps = flags->save_checkpoint_steps;
  options.save_checkpoint_secs = 0;
  options.save_summaries_steps = 0;
  options.log_step_count_steps = 0;
  options.max_wait_secs = flags->max_wait_secs;
  options.hooks.push_back(df::train::StopAtStepHook::Create(flags->last_step));
  options.on_training_end = [&] { return df::EndJob(task->cluster); };
  auto session = df::train::MonitoredTrainingSession::Create(root, options);
  if (!session.ok()) return Fail(session.status());
  std::cout << me << " ready" << std::endl;
  while (!(*session)->ShouldStop()) {
    auto out = (*session)->Run({step_after});
    if (absl::IsOutOfRange(out.status())) break;  // The chief ended the job.
    if (!out.ok()) return Fail(out.status());
    std::cout << me << " global_step=" << (*out)[0].scalar<int64_t>()
              << std::endl;
    if (flags->step_delay_ms > 0) {
      std::this_thread::sleep_for(
          std::chrono::milliseconds(flags->step_delay_ms));
    }
  }
  absl::Status closed = (*session)->Close();
  if (!closed.ok()) return Fail(closed);
  std::cout << me << " done (recoveries: " << (*session)->num_recoveries()
            << ")" << std::endl;
  return 0;
}
