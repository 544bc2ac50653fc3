// Bounded staleness (stale synchronous parallel): asynchronous training in
// which no worker runs more than `max_staleness` steps ahead of the slowest.
//
//   train::AdamOptimizer adam(learning_rate);
//   train::BoundedStalenessOptimizer bounded(&adam, /*max_staleness=*/2,
//                                            num_workers, task_index);
//   Operation train_op = bounded.Minimize(scope, loss, global_step).value();
//   auto hook = bounded.MakeSessionRunHook();  // retires the worker at End
//
// Each worker applies its gradients at once, as in asynchronous training, and
// then counts its step on a staleness barrier beside the global step (per-
// worker step counters on a ps task). Having finished step c, a worker waits
// there until every other active worker has finished step c -
// max_staleness, so the values it reads for step c + 1 include every update
// of the other workers' first c - max_staleness steps. Fast workers are held
// back only when they get too far ahead: unlike synchronous replicas, no step
// waits for everyone. max_staleness = 0 makes a barrier per step;
// a large one is plain asynchronous training.
//
// A worker that stops training must retire (the hook's End does), or the
// others would wait for it forever; a retired worker that runs a step again
// takes part again.
#ifndef DISTFLOW_TRAIN_BOUNDED_STALENESS_H_
#define DISTFLOW_TRAIN_BOUNDED_STALENESS_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "distflow/ops/state_ops.h"
#include "distflow/scope.h"
#include "distflow/train/optimizer.h"
#include "distflow/train/session_run_hook.h"

namespace distflow {
namespace train {

class BoundedStalenessOptimizer {
 public:
  // Wraps `optimizer` (not owned; it must outlive this object) for worker
  // `worker_index` of `num_workers`. Invalid arguments are reported by
  // ApplyGradients.
  BoundedStalenessOptimizer(Optimizer* optimizer, int max_staleness,
                            int num_workers, int worker_index);
  BoundedStalenessOptimizer(const BoundedStalenessOptimizer&) = delete;
  BoundedStalenessOptimizer& operator=(const BoundedStalenessOptimizer&) =
      delete;

  // The wrapped optimizer's ComputeGradients.
  absl::StatusOr<std::vector<GradAndVar>> ComputeGradients(
      const Scope& scope, const Output& loss,
      const std::vector<ops::Variable>& var_list = {});
  // The wrapped optimizer's update (incrementing `global_step` if valid),
  // then the wait on the staleness barrier. The barrier lives beside the
  // global step, else beside the first variable; every worker must build it
  // with the same max_staleness and num_workers (INVALID_ARGUMENT at run time
  // otherwise). INVALID_ARGUMENT for max_staleness < 0, num_workers < 1 or a
  // worker_index outside [0, num_workers); the wrapped optimizer's errors.
  absl::StatusOr<Operation> ApplyGradients(
      const Scope& scope, const std::vector<GradAndVar>& grads_and_vars,
      const ops::Variable& global_step = ops::Variable());
  absl::StatusOr<Operation> Minimize(
      const Scope& scope, const Output& loss,
      const ops::Variable& global_step = ops::Variable(),
      const std::vector<ops::Variable>& var_list = {});

  // A hook whose End retires this worker. Build the train op first; this
  // optimizer must outlive the hook.
  std::unique_ptr<SessionRunHook> MakeSessionRunHook();

  // Valid after ApplyGradients: leaves this worker out of the slowest.
  Operation retire_op() const { return retire_op_; }
  // Valid after ApplyGradients: every worker's count of finished steps (an
  // int64 vector [num_workers]).
  Output worker_steps() const { return worker_steps_; }

 private:
  Optimizer* const optimizer_;
  const int max_staleness_;
  const int num_workers_;
  const int worker_index_;
  Operation retire_op_;
  Output worker_steps_;
};

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_BOUNDED_STALENESS_H_
