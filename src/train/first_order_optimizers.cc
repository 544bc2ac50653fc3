// Gradient descent, momentum and Adagrad optimizers.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "distflow/ops/training_ops.h"
#include "distflow/train/optimizers.h"

namespace distflow {
namespace train {

GradientDescentOptimizer::GradientDescentOptimizer(const Input& learning_rate,
                                                   std::string name)
    : Optimizer(std::move(name)), learning_rate_(learning_rate) {}

Operation GradientDescentOptimizer::ApplyDense(const Scope& scope,
                                               const Output& grad,
                                               const ops::Variable& var) {
  return ops::ResourceApplyGradientDescent(scope, var.handle(), learning_rate_,
                                           grad);
}

Operation GradientDescentOptimizer::ApplySparse(const Scope& scope,
                                                const IndexedSlices& grad,
                                                const ops::Variable& var) {
  return ops::ResourceSparseApplyGradientDescent(
      scope, var.handle(), learning_rate_, grad.values, grad.indices);
}

MomentumOptimizer::MomentumOptimizer(const Input& learning_rate,
                                     double momentum, bool use_nesterov,
                                     std::string name)
    : Optimizer(std::move(name)),
      learning_rate_(learning_rate),
      momentum_(momentum),
      use_nesterov_(use_nesterov) {}

absl::Status MomentumOptimizer::CreateSlots(
    const Scope& scope, const std::vector<ops::Variable>& vars) {
  for (const ops::Variable& v : vars) {
    DF_RETURN_IF_ERROR(
        GetOrCreateSlot(scope, v, "momentum", name(), 0.0).status());
  }
  return absl::OkStatus();
}

Operation MomentumOptimizer::ApplyDense(const Scope& scope, const Output& grad,
                                        const ops::Variable& var) {
  return ops::ResourceApplyMomentum(
      scope, var.handle(), GetSlot(var, "momentum").handle(), learning_rate_,
      grad, momentum_, use_nesterov_);
}

Operation MomentumOptimizer::ApplySparse(const Scope& scope,
                                         const IndexedSlices& grad,
                                         const ops::Variable& var) {
  return ops::ResourceSparseApplyMomentum(
      scope, var.handle(), GetSlot(var, "momentum").handle(), learning_rate_,
      grad.values, grad.indices, momentum_, use_nesterov_);
}

AdagradOptimizer::AdagradOptimizer(const Input& learning_rate,
                                   double initial_accumulator_value,
                                   std::string name)
    : Optimizer(std::move(name)),
      learning_rate_(learning_rate),
      initial_accumulator_value_(initial_accumulator_value) {}

absl::Status AdagradOptimizer::CreateSlots(
    const Scope& scope, const std::vector<ops::Variable>& vars) {
  if (!(initial_accumulator_value_ > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        name(), ": initial_accumulator_value must be positive, got ",
        initial_accumulator_value_));
  }
  for (const ops::Variable& v : vars) {
    DF_RETURN_IF_ERROR(GetOrCreateSlot(scope, v, "accumulator", name(),
                                       initial_accumulator_value_)
                           .status());
  }
  return absl::OkStatus();
}

Operation AdagradOptimizer::ApplyDense(const Scope& scope, const Output& grad,
                                       const ops::Variable& var) {
  return ops::ResourceApplyAdagrad(scope, var.handle(),
                                   GetSlot(var, "accumulator").handle(),
                                   learning_rate_, grad);
}

Operation AdagradOptimizer::ApplySparse(const Scope& scope,
                                        const IndexedSlices& grad,
                                        const ops::Variable& var) {
  return ops::ResourceSparseApplyAdagrad(
      scope, var.handle(), GetSlot(var, "accumulator").handle(), learning_rate_,
      grad.values, grad.indices);
}

}  // namespace train
}  // namespace distflow
