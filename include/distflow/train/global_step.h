// The global step: the count of training steps taken, shared by every worker
// of a job (it lives with the variables, on a ps task in a cluster).
#ifndef DISTFLOW_TRAIN_GLOBAL_STEP_H_
#define DISTFLOW_TRAIN_GLOBAL_STEP_H_

#include "absl/status/statusor.h"
#include "distflow/ops/state_ops.h"
#include "distflow/scope.h"

namespace distflow {
namespace train {

// The graph's global step: an int64 scalar variable named "global_step"
// (under the scope's name prefix), starting at 0, not trainable. The first
// call creates it in `scope` (with its device); later calls on any scope of
// the same graph return the same variable. Optimizer::ApplyGradients
// increments it by one per step when given it.
ops::Variable GetOrCreateGlobalStep(const Scope& scope);

// The graph's global step; NOT_FOUND if none was created.
absl::StatusOr<ops::Variable> GetGlobalStep(const Scope& scope);

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_GLOBAL_STEP_H_
