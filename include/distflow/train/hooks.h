// The standard hooks of a MonitoredTrainingSession (see session_run_hook.h
// for when each method runs):
//
//   StopAtStepHook       stops at a global step
//   LoggingTensorHook    logs named tensors every N steps or seconds
//   StepCounterHook      logs (and writes) global steps/sec and examples/sec
//   SummarySaverHook     writes summaries every N steps or seconds
//   CheckpointSaverHook  saves checkpoints every N steps or seconds and at End
//   NanTensorHook        stops with an error when the loss is NaN or Inf
//   FinalOpsHook         runs ops when the session closes, keeps their values
//
// Hooks are made by Create functions whose arguments are checked in Begin: a
// bad argument makes MonitoredTrainingSession::Create fail with an error
// naming the hook. A hook object serves one session.
#ifndef DISTFLOW_TRAIN_HOOKS_H_
#define DISTFLOW_TRAIN_HOOKS_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "distflow/ops/state_ops.h"
#include "distflow/scope.h"
#include "distflow/session.h"
#include "distflow/tensor.h"
#include "distflow/train/session_run_hook.h"

namespace distflow {
namespace train {

class Saver;
class SummaryWriter;

// How often a hook acts: every `steps` steps or every `secs` seconds; exactly
// one must be positive.
struct Every {
  static Every Steps(int64_t n) { return {n, 0}; }
  static Every Secs(double s) { return {0, s}; }

  // INVALID_ARGUMENT naming `hook` unless exactly one of the two is positive.
  absl::Status Validate(const std::string& hook) const;

  int64_t steps = 0;
  double secs = 0;
};

// When an Every is due, by step and clock.
class EveryTimer {
 public:
  explicit EveryTimer(Every every) : every_(every) {}

  // True at the first step seen, and then once `steps` steps or `secs`
  // seconds have passed since the last Fire (never twice at one step).
  bool Due(int64_t step) const;
  // Records that the hook acted at `step`. Returns the steps and time since
  // the previous Fire (nothing the first time).
  std::optional<std::pair<int64_t, absl::Duration>> Fire(int64_t step);
  // Forgets the last Fire, so the next step is due.
  void Reset() { last_.reset(); }

 private:
  Every every_;
  struct Mark {
    int64_t step;
    std::chrono::steady_clock::time_point time;
  };
  std::optional<Mark> last_;
};

// Requests a stop once the global step reaches the last step. Needs the
// graph's global step (train::GetOrCreateGlobalStep).
class StopAtStepHook : public SessionRunHook {
 public:
  // Stops when the global step is at least `last_step`.
  static std::unique_ptr<StopAtStepHook> Create(int64_t last_step);
  // Stops `num_steps` global steps after the one found when the session is
  // first created.
  static std::unique_ptr<StopAtStepHook> ForNumSteps(int64_t num_steps);

  absl::Status Begin(const Scope& scope) override;
  absl::Status AfterCreateSession(ClientSession* session) override;
  SessionRunArgs BeforeRun(SessionRunContext* context) override;
  absl::Status AfterRun(SessionRunContext* context,
                        const SessionRunValues& values) override;

  // The step it stops at (known once the session exists).
  std::optional<int64_t> last_step() const { return last_step_; }

 private:
  StopAtStepHook(std::optional<int64_t> last_step,
                 std::optional<int64_t> num_steps)
      : last_step_(last_step), num_steps_(num_steps) {}

  std::optional<int64_t> last_step_;
  std::optional<int64_t> num_steps_;
  ops::Variable global_step_;
};

// Logs the values of named tensors ("loss = 0.25, accuracy = 0.9") every N
// of this worker's steps or every N seconds, fetched in the step itself.
class LoggingTensorHook : public SessionRunHook {
 public:
  using NamedOutputs = std::vector<std::pair<std::string, Output>>;
  static std::unique_ptr<LoggingTensorHook> Create(NamedOutputs tensors,
                                                   Every every);

  absl::Status Begin(const Scope& scope) override;
  SessionRunArgs BeforeRun(SessionRunContext* context) override;
  absl::Status AfterRun(SessionRunContext* context,
                        const SessionRunValues& values) override;

 private:
  LoggingTensorHook(NamedOutputs tensors, Every every)
      : tensors_(std::move(tensors)), every_(every), timer_(every) {}

  NamedOutputs tensors_;
  Every every_;
  EveryTimer timer_;
  int64_t iteration_ = 0;
  bool logging_this_step_ = false;
};

// Measures training speed from the global step: logs global steps/sec (and
// examples/sec given examples_per_step) every N global steps or seconds and,
// given a writer, writes them as the scalar summaries "global_step/sec" and
// "examples/sec".
class StepCounterHook : public SessionRunHook {
 public:
  struct Options {
    Every every = Every::Steps(100);
    // The batch size of one step over all the workers it counts; 0 for none.
    int64_t examples_per_step = 0;
    std::shared_ptr<SummaryWriter> writer;
  };
  static std::unique_ptr<StepCounterHook> Create(const Options& options);

  absl::Status Begin(const Scope& scope) override;
  absl::Status AfterCreateSession(ClientSession* session) override;
  SessionRunArgs BeforeRun(SessionRunContext* context) override;
  absl::Status AfterRun(SessionRunContext* context,
                        const SessionRunValues& values) override;

 private:
  explicit StepCounterHook(const Options& options)
      : options_(options), timer_(options.every) {}

  Options options_;
  EveryTimer timer_;
  ops::Variable global_step_;
};

// Writes summaries for TensorBoard every N global steps or seconds: runs the
// summary op in the step and adds its value to the writer at the global step
// read in that step, then flushes. Writes the graph once, when the session is
// first created.
class SummarySaverHook : public SessionRunHook {
 public:
  struct Options {
    Every every = Every::Steps(100);
    // A serialized Summary (ops::ScalarSummary, ops::MergeSummary). Default:
    // every summary of the graph merged into one (FAILED_PRECONDITION if the
    // graph has none).
    Output summary_op;
    // Required.
    std::shared_ptr<SummaryWriter> writer;
  };
  static std::unique_ptr<SummarySaverHook> Create(const Options& options);

  absl::Status Begin(const Scope& scope) override;
  absl::Status AfterCreateSession(ClientSession* session) override;
  SessionRunArgs BeforeRun(SessionRunContext* context) override;
  absl::Status AfterRun(SessionRunContext* context,
                        const SessionRunValues& values) override;
  absl::Status End(ClientSession* session) override;

 private:
  explicit SummarySaverHook(const Options& options)
      : options_(options), timer_(options.every) {}

  Options options_;
  EveryTimer timer_;
  ops::Variable global_step_;
  std::optional<Scope> scope_;
  bool graph_written_ = false;
  // The global step the next step is expected to read, once known.
  std::optional<int64_t> next_step_;
  bool summarizing_this_step_ = false;
};

// Saves checkpoints of the model every N global steps or seconds (counted
// from when the session was created or restored) and when the session
// closes, in checkpoint_dir, at the global step. Meant for the chief.
class CheckpointSaverHook : public SessionRunHook {
 public:
  struct Options {
    // Required.
    std::string checkpoint_dir;
    Every every = Every::Secs(600);
    // Default: a Saver over every global variable, made in Begin.
    std::shared_ptr<Saver> saver;
  };
  static std::unique_ptr<CheckpointSaverHook> Create(const Options& options);

  absl::Status Begin(const Scope& scope) override;
  absl::Status AfterCreateSession(ClientSession* session) override;
  SessionRunArgs BeforeRun(SessionRunContext* context) override;
  absl::Status AfterRun(SessionRunContext* context,
                        const SessionRunValues& values) override;
  absl::Status End(ClientSession* session) override;

 private:
  explicit CheckpointSaverHook(const Options& options)
      : options_(options), timer_(options.every) {}
  absl::Status Save(ClientSession* session, int64_t step);

  Options options_;
  EveryTimer timer_;
  ops::Variable global_step_;
  std::optional<int64_t> last_saved_;
};

// Every summary of the graph (ScalarSummary and MergeSummary outputs that no
// MergeSummary takes in), merged into one; an invalid Output if there is none.
Output MergeAllSummaries(const Scope& scope);

// Checks a loss every step: a NaN or infinite value ends training with
// INVALID_ARGUMENT naming the loss and the global step, or, when
// fail_on_nan_loss is false, logs that and requests a stop.
class NanTensorHook : public SessionRunHook {
 public:
  static std::unique_ptr<NanTensorHook> Create(Output loss,
                                               bool fail_on_nan_loss = true);

  absl::Status Begin(const Scope& scope) override;
  SessionRunArgs BeforeRun(SessionRunContext* context) override;
  absl::Status AfterRun(SessionRunContext* context,
                        const SessionRunValues& values) override;

 private:
  NanTensorHook(Output loss, bool fail) : loss_(loss), fail_(fail) {}

  Output loss_;
  bool fail_;
  // The global step, when the graph has one.
  std::optional<ops::Variable> global_step_;
};

// Runs `final_ops` (with `feeds`) when the session closes after training, as
// for a last evaluation, and keeps their values.
class FinalOpsHook : public SessionRunHook {
 public:
  static std::unique_ptr<FinalOpsHook> Create(
      std::vector<Output> final_ops, ClientSession::FeedDict feeds = {});

  absl::Status Begin(const Scope& scope) override;
  absl::Status End(ClientSession* session) override;

  // The values of final_ops; empty until the session has closed.
  const std::vector<Tensor>& final_values() const { return values_; }

 private:
  FinalOpsHook(std::vector<Output> ops, ClientSession::FeedDict feeds)
      : ops_(std::move(ops)), feeds_(std::move(feeds)) {}

  std::vector<Output> ops_;
  ClientSession::FeedDict feeds_;
  std::vector<Tensor> values_;
};

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_HOOKS_H_
