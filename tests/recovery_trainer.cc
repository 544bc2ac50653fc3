// A small between-graph training job for the recovery tests: a linear
// regression (y = 3x + 2 on generated points) whose variables and global step
// live on the ps tasks, trained asynchronously by every worker under a
// MonitoredTrainingSession that checkpoints and stops at a last step.
//
//   recovery_trainer --job_name=ps --task_index=0 --ps_hosts=...
//       --worker_hosts=...
//   recovery_trainer --job_name=worker --task_index=0 --ps_hosts=...
//       --worker_hosts=... --last_step=300 --checkpoint_dir=ckpt
//       --save_checkpoint_steps=50 --step_delay_ms=10 [--issync=1]
//
// With --issync=1 the updates are synchronous: a SyncReplicasOptimizer
// averages one gradient of each worker per global step (of the first
// --replicas_to_aggregate workers' gradients, the rest being backups), and
// its hook runs the chief's aggregation loop.
//
// Each worker prints one line per step, "worker:<i> global_step=<n>", with
// the global step just after its update, so that a test sees progress and
// which steps were done again; and "worker:<i> done" when it ends normally.
// The chief tells the ps tasks the job is done when it reaches last_step
// (EndJob); they exit with status 0 once the other workers are through.
//
// With --master=host:port a worker starts no server of its own: it is a
// client whose session runs on that task's master (another process, such as
// `distflow server`), so that a test can kill and restart the master's task.
// With --pause_at_step=N and --pause_file=F it waits, after the first step
// that reaches global step N, until file F exists ("worker:<i> paused" says
// when), so that a test can change the cluster between two of its steps;
// then, before its next step, it waits until its master answers a plain
// session, so that the step reaches the master's process as it is then.
#include <unistd.h>

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
  int pause_at_step = 0;
  bool issync = false;
  int replicas_to_aggregate = 0;  // 0: every worker
  std::string checkpoint_dir;
  std::string master;  // host:port of another task's master; "": our own
  std::string pause_file;
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
  auto pause = NonNegativeIntFlag(args, "--pause_at_step", 0);
  if (!pause.ok()) return pause.status();
  flags.pause_at_step = *pause;
  auto issync = NonNegativeIntFlag(args, "--issync", 0);
  if (!issync.ok()) return issync.status();
  flags.issync = *issync != 0;
  auto replicas = NonNegativeIntFlag(args, "--replicas_to_aggregate", 0);
  if (!replicas.ok()) return replicas.status();
  flags.replicas_to_aggregate = *replicas;
  flags.checkpoint_dir = FlagValue(args, "--checkpoint_dir", "");
  flags.master = FlagValue(args, "--master", "");
  flags.pause_file = FlagValue(args, "--pause_file", "");
  if ((flags.pause_at_step > 0) != !flags.pause_file.empty()) {
    return absl::InvalidArgumentError(
        "--pause_at_step and --pause_file go together");
  }
  return flags;
}

// Runs a trivial step on a plain session to `target` until the master answers
// (not UNAVAILABLE), for at most a minute. Its channel reconnects to a
// restarted master, and the monitored session's channel to the same address
// shares that connection.
absl::Status WaitForMaster(const std::string& target) {
  df::Scope root = df::Scope::NewRootScope();
  df::Output one = df::ops::Const(root, 1.0f);
  df::SessionOptions options;
  options.target = target;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    auto session = df::ClientSession::Create(root, options);
    if (!session.ok()) return session.status();
    absl::Status s = (*session)->Run({one}).status();
    if (!absl::IsUnavailable(s) ||
        std::chrono::steady_clock::now() > deadline) {
      return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

int main(int argc, char** argv) {
  auto task = df::ParseTaskConfig(argc, argv);
  if (!task.ok()) return Fail(task.status());
  auto flags = ParseFlags(task->remaining_args);
  if (!flags.ok()) return Fail(flags.status());
  std::unique_ptr<df::Server> server;
  if (flags->master.empty()) {
    auto created =
        df::Server::Create(task->cluster, task->job_name, task->task_index);
    if (!created.ok()) return Fail(created.status());
    server = *std::move(created);
  }
  if (task->job_name == "ps") {
    if (server == nullptr) {
      return Fail(absl::InvalidArgumentError("--master is for workers"));
    }
    absl::Status joined = server->Join();
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
  const int num_workers = task->cluster.num_tasks("worker");
  df::train::SyncReplicasOptimizer sync(&sgd,
                                        flags->replicas_to_aggregate > 0
                                            ? flags->replicas_to_aggregate
                                            : num_workers,
                                        num_workers);
  auto train_op = flags->issync ? sync.Minimize(s, loss, global_step)
                                : sgd.Minimize(s, loss, global_step);
  if (!train_op.ok()) return Fail(train_op.status());
  // The global step just after this step's update. A variable's value flows
  // out of it when the step starts, so an Identity would show the value from
  // before the update; adding 0 (an AssignAdd, run after the train op) reads
  // it at that moment.
  df::Output step_after = df::ops::AssignAdd(
      s.WithOpName("step_after").WithControlDependencies({*train_op}),
      global_step, int64_t{0});

  df::train::MonitoredTrainingSession::Options options;
  options.master =
      server != nullptr ? server->target() : "grpc://" + flags->master;
  options.is_chief = task->is_chief;
  options.checkpoint_dir = flags->checkpoint_dir;
  options.save_checkpoint_steps = flags->save_checkpoint_steps;
  options.save_checkpoint_secs = 0;
  options.save_summaries_steps = 0;
  options.log_step_count_steps = 0;
  options.max_wait_secs = flags->max_wait_secs;
  options.hooks.push_back(df::train::StopAtStepHook::Create(flags->last_step));
  if (flags->issync) {
    options.hooks.push_back(sync.MakeSessionRunHook(task->is_chief));
  }
  options.on_training_end = [&] { return df::EndJob(task->cluster); };
  auto session = df::train::MonitoredTrainingSession::Create(root, options);
  if (!session.ok()) return Fail(session.status());
  std::cout << me << " ready" << std::endl;
  while (!(*session)->ShouldStop()) {
    auto out = (*session)->Run({step_after});
    if (absl::IsOutOfRange(out.status())) break;  // The chief ended the job.
    if (!out.ok()) return Fail(out.status());
    const int64_t step = (*out)[0].scalar<int64_t>();
    std::cout << me << " global_step=" << step << std::endl;
    if (flags->pause_at_step > 0 && step >= flags->pause_at_step) {
      std::cout << me << " paused" << std::endl;
      while (access(flags->pause_file.c_str(), F_OK) != 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      flags->pause_at_step = 0;
      absl::Status answered = WaitForMaster(options.master);
      if (!answered.ok()) return Fail(answered);
    }
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
