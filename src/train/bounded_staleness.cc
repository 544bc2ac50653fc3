#include "distflow/train/bounded_staleness.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/node_builder.h"

namespace distflow {
namespace train {
namespace {

// Retires the worker when training ends normally.
class RetireHook : public SessionRunHook {
 public:
  explicit RetireHook(const BoundedStalenessOptimizer* optimizer)
      : optimizer_(optimizer) {}
  absl::Status End(ClientSession* session) override {
    if (!optimizer_->retire_op().valid()) return absl::OkStatus();
    return AddErrorContext(session->RunTargets({optimizer_->retire_op()}),
                           "retiring from the staleness barrier");
  }

 private:
  const BoundedStalenessOptimizer* optimizer_;
};

}  // namespace

BoundedStalenessOptimizer::BoundedStalenessOptimizer(Optimizer* optimizer,
                                                     int max_staleness,
                                                     int num_workers,
                                                     int worker_index)
    : optimizer_(optimizer),
      max_staleness_(max_staleness),
      num_workers_(num_workers),
      worker_index_(worker_index) {}

absl::StatusOr<std::vector<GradAndVar>>
BoundedStalenessOptimizer::ComputeGradients(
    const Scope& scope, const Output& loss,
    const std::vector<ops::Variable>& var_list) {
  return optimizer_->ComputeGradients(scope, loss, var_list);
}

absl::StatusOr<Operation> BoundedStalenessOptimizer::Minimize(
    const Scope& scope, const Output& loss, const ops::Variable& global_step,
    const std::vector<ops::Variable>& var_list) {
  DF_ASSIGN_OR_RETURN(std::vector<GradAndVar> grads,
                      ComputeGradients(scope.WithOpName(""), loss, var_list));
  return ApplyGradients(scope, grads, global_step);
}

absl::StatusOr<Operation> BoundedStalenessOptimizer::ApplyGradients(
    const Scope& scope, const std::vector<GradAndVar>& grads_and_vars,
    const ops::Variable& global_step) {
  DF_RETURN_IF_ERROR(scope.status());
  if (max_staleness_ < 0 || num_workers_ < 1 || worker_index_ < 0 ||
      worker_index_ >= num_workers_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "BoundedStalenessOptimizer(", optimizer_->name(),
        "): needs max_staleness >= 0 (got ", max_staleness_,
        "), num_workers >= 1 (got ", num_workers_,
        ") and 0 <= worker_index < num_workers (got ", worker_index_, ")"));
  }
  Scope s = scope.WithNoControlDependencies().NewSubScope("bounded_staleness");
  DF_ASSIGN_OR_RETURN(Operation update,
                      optimizer_->ApplyGradients(s.WithOpName("update"),
                                                 grads_and_vars, global_step));
  // Beside the global step, else beside the first variable: on a ps task.
  Operation home = global_step.handle().valid()
                       ? global_step.handle().op()
                       : grads_and_vars.front().second.handle().op();
  Output barrier =
      ops::StalenessBarrier(s.ColocateWith(home).WithOpName("barrier"),
                            num_workers_, max_staleness_, "staleness_barrier");
  Output advance = ops::StalenessBarrierAdvance(
      s.WithControlDependencies({update}).WithOpName("advance"), barrier,
      worker_index_);
  retire_op_ = ops::StalenessBarrierRetire(s.WithOpName("retire"), barrier,
                                           worker_index_);
  worker_steps_ =
      ops::StalenessBarrierSteps(s.WithOpName("worker_steps"), barrier);
  Operation train_op = NodeBuilder(scope, "NoOp", "train_op")
                           .ControlInput(advance.op())
                           .Finalize();
  DF_RETURN_IF_ERROR(scope.status());
  return train_op;
}

std::unique_ptr<SessionRunHook>
BoundedStalenessOptimizer::MakeSessionRunHook() {
  return std::make_unique<RetireHook>(this);
}

}  // namespace train
}  // namespace distflow
