// Synchronous training with between-graph replication: the gradients of
// several workers are averaged into one update per step.
//
//   train::AdamOptimizer adam(learning_rate);
//   train::SyncReplicasOptimizer sync(&adam, /*replicas_to_aggregate=*/2,
//                                     /*total_num_replicas=*/3);
//   auto global_step = train::GetOrCreateGlobalStep(scope);
//   Operation train_op = sync.Minimize(scope, loss, global_step).value();
//   auto hook = sync.MakeSessionRunHook(/*is_chief=*/task_index == 0);
//   // give `hook` to the monitored session; run train_op in a loop.
//
// How a step works (TensorFlow's design):
// - every variable has a gradient accumulator beside it (on its ps task) and
//   the job has one token queue (beside the global step);
// - each worker's train op adds its gradients to the accumulators, marked with
//   its local step, then dequeues a token: the barrier. The token is the new
//   global step, which becomes the worker's local step (kept beside the global
//   step, so that a worker's step moves only its variables and gradients);
// - the chief runs an aggregation loop (started by the hook): it takes the
//   average of replicas_to_aggregate gradients from every accumulator, applies
//   it with the wrapped optimizer, increments the global step and enqueues one
//   token per replica carrying the new global step;
// - a gradient computed at a local step older than the accumulator's step is
//   stale and dropped. With total_num_replicas > replicas_to_aggregate the
//   extra workers are backups: a step proceeds with the first gradients to
//   arrive and the slowest workers' gradients are dropped, so one slow worker
//   does not slow every step.
//
// Asynchronous training (the wrapped optimizer alone) is the default; this is
// the opt-in. The optimizer builds into one graph and is not thread-safe.
#ifndef DISTFLOW_TRAIN_SYNC_REPLICAS_OPTIMIZER_H_
#define DISTFLOW_TRAIN_SYNC_REPLICAS_OPTIMIZER_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "distflow/ops/state_ops.h"
#include "distflow/scope.h"
#include "distflow/train/optimizer.h"
#include "distflow/train/session_run_hook.h"

namespace distflow {
namespace train {

class SyncReplicasOptimizer {
 public:
  // Wraps `optimizer` (not owned; it must outlive this object). Each step
  // averages `replicas_to_aggregate` gradients per variable; the job has
  // `total_num_replicas` workers (default: replicas_to_aggregate). Invalid
  // counts (< 1) are reported by ApplyGradients.
  SyncReplicasOptimizer(Optimizer* optimizer, int replicas_to_aggregate,
                        int total_num_replicas = -1);
  SyncReplicasOptimizer(const SyncReplicasOptimizer&) = delete;
  SyncReplicasOptimizer& operator=(const SyncReplicasOptimizer&) = delete;

  // The wrapped optimizer's ComputeGradients.
  absl::StatusOr<std::vector<GradAndVar>> ComputeGradients(
      const Scope& scope, const Output& loss,
      const std::vector<ops::Variable>& var_list = {});

  // Builds the synchronous machinery for `grads_and_vars` (pairs without a
  // gradient are skipped) and returns this worker's train op: add the
  // gradients to the accumulators, wait for a token, adopt it as the local
  // step. The train op does not change the variables or the global step; the
  // chief's aggregation does. `global_step` is required. Call once per graph.
  // INVALID_ARGUMENT for bad replica counts, a missing global step, no
  // gradient at all, or a second call; the wrapped optimizer's errors
  // otherwise.
  absl::StatusOr<Operation> ApplyGradients(
      const Scope& scope, const std::vector<GradAndVar>& grads_and_vars,
      const ops::Variable& global_step);

  // ComputeGradients, then ApplyGradients.
  absl::StatusOr<Operation> Minimize(
      const Scope& scope, const Output& loss, const ops::Variable& global_step,
      const std::vector<ops::Variable>& var_list = {});

  // A hook that does what each task must do around the session (see
  // distflow/train/session_run_hook.h): on AfterCreateSession every worker
  // sets its local step to the global step; the chief also sets the
  // accumulators' step, enqueues `num_tokens` initial tokens (see
  // GetInitTokensOp) and starts the aggregation loop, a thread that runs
  // chief_aggregate_op() until End. A failure of the loop is returned by the
  // chief's next AfterRun. End (chief) stops the loop and closes the token
  // queue, so that workers waiting for a token end with OUT_OF_RANGE instead
  // of waiting forever; a closed queue stays closed for the life of its ps
  // task, so a new job starts with fresh ps tasks. The hook must be ended or
  // destroyed while its session is still open (it stops the loop through it),
  // and this optimizer must outlive it. Build the train op before the hook's
  // Begin.
  std::unique_ptr<SessionRunHook> MakeSessionRunHook(bool is_chief,
                                                     int num_tokens = -1);

  // --- The pieces, for programs that drive them without the hook ---
  // Valid after ApplyGradients.

  // The chief's aggregation step: waits for the gradients, applies their
  // average, increments the global step and enqueues the next tokens.
  Operation chief_aggregate_op() const { return aggregate_op_; }
  // Sets every accumulator's step to the global step (and reopens it).
  Operation chief_init_op() const { return chief_init_op_; }
  // Sets this worker's local step to the global step.
  Operation local_step_init_op() const { return local_step_init_op_; }
  // Closes the accumulators (a waiting aggregation step fails with
  // CANCELLED) until chief_init_op runs again.
  Operation close_accumulators_op() const { return close_accumulators_op_; }
  // Closes the token queue: workers waiting for a token fail with
  // OUT_OF_RANGE.
  Operation close_token_queue_op() const { return close_token_queue_op_; }
  // The worker's local step: an int64 variable beside the global step (on
  // its ps task, where the gradients are applied and the token dequeued, so
  // that neither travels between the worker and the ps every step), one per
  // worker task, not among the global variables.
  const ops::Variable& local_step() const { return local_step_; }
  // The token queue (a handle).
  const Output& token_queue() const { return token_queue_; }

  // An op that enqueues `num_tokens` tokens carrying the global step, for the
  // chief to run once at the start. Workers need them when
  // total_num_replicas < replicas_to_aggregate (each must then contribute
  // several gradients to one step); -1 means exactly that many,
  // replicas_to_aggregate - total_num_replicas (none otherwise, so that every
  // step, the first included, averages one gradient per worker). TensorFlow
  // defaults to replicas_to_aggregate, which lets each worker run one step
  // ahead. INVALID_ARGUMENT if num_tokens is below the number needed, or
  // before ApplyGradients.
  absl::StatusOr<Operation> GetInitTokensOp(int num_tokens = -1);

  int replicas_to_aggregate() const { return replicas_to_aggregate_; }
  int total_num_replicas() const { return total_num_replicas_; }

 private:
  // The tokens one aggregation step enqueues: one per gradient the next step
  // needs, and at least one per worker.
  int TokensPerStep() const;

  Optimizer* const optimizer_;
  const int replicas_to_aggregate_;
  const int total_num_replicas_;

  bool built_ = false;
  Scope scope_ = Scope::NewRootScope();  // where ApplyGradients built
  ops::Variable global_step_;
  ops::Variable local_step_;
  Output token_queue_;
  Operation aggregate_op_;
  Operation chief_init_op_;
  Operation local_step_init_op_;
  Operation close_accumulators_op_;
  Operation close_token_queue_op_;
};

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_SYNC_REPLICAS_OPTIMIZER_H_
