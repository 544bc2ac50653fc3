// Optimizer::ComputeGradients and Minimize: the part of the optimizer that
// differentiates the loss.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "distflow/gradients.h"
#include "distflow/train/optimizer.h"

namespace distflow {
namespace train {

absl::StatusOr<std::vector<GradAndVar>> Optimizer::ComputeGradients(
    const Scope& scope, const Output& loss,
    const std::vector<ops::Variable>& var_list) {
  DF_RETURN_IF_ERROR(scope.status());
  if (!loss.valid()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name_, ": the loss is an invalid output"));
  }
  if (!DataTypeIsFloating(loss.dtype())) {
    return absl::InvalidArgumentError(absl::StrCat(
        name_, ": the loss ", loss.name(), " must be float32 or float64, got ",
        DataTypeName(loss.dtype())));
  }
  std::vector<ops::Variable> vars =
      var_list.empty() ? ops::TrainableVariables(scope) : var_list;
  if (vars.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name_,
                     ": no variables to optimize (the graph has no trainable "
                     "variables and no var_list was given)"));
  }
  std::vector<Output> xs;
  for (const ops::Variable& v : vars) {
    if (!v.valid() || !v.handle().valid()) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": var_list holds an invalid variable"));
    }
    // The gradient is taken with respect to the variable's read value.
    xs.push_back(v);
  }
  DF_ASSIGN_OR_RETURN(std::vector<Gradient> grads,
                      Gradients(scope.NewSubScope("gradients"), {loss}, xs));
  std::vector<GradAndVar> out;
  for (size_t i = 0; i < vars.size(); ++i) out.push_back({grads[i], vars[i]});
  return out;
}

absl::StatusOr<Operation> Optimizer::Minimize(
    const Scope& scope, const Output& loss, const ops::Variable& global_step,
    const std::vector<ops::Variable>& var_list) {
  DF_ASSIGN_OR_RETURN(std::vector<GradAndVar> grads,
                      ComputeGradients(scope.WithOpName(""), loss, var_list));
  return ApplyGradients(scope, grads, global_step);
}

}  // namespace train
}  // namespace distflow
