// Adam, RMSProp and FTRL optimizers.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "distflow/train/optimizers.h"
#include "graph/graph.h"

namespace distflow {
namespace train {

AdamOptimizer::AdamOptimizer(const Input& learning_rate, double beta1,
                             double beta2, double epsilon, std::string name)
    : Optimizer(std::move(name)),
      learning_rate_(learning_rate),
      beta1_(beta1),
      beta2_(beta2),
      epsilon_(epsilon) {}

absl::Status AdamOptimizer::CreateSlots(
    const Scope& scope, const std::vector<ops::Variable>& vars) {
  for (const ops::Variable& v : vars) {
    DF_RETURN_IF_ERROR(GetOrCreateSlot(scope, v, "m", name(), 0.0).status());
    DF_RETURN_IF_ERROR(
        GetOrCreateSlot(scope, v, "v", name() + "_1", 0.0).status());
  }
  // One pair of beta powers per graph, beside the first variable, of its type.
  const bool exists = beta1_power_.valid() &&
                      scope.graph()->FindNode(beta1_power_.var_name()) ==
                          beta1_power_.handle().node();
  if (exists || vars.empty()) return absl::OkStatus();
  Scope s = scope.ColocateWith(vars[0].handle().op());
  ops::VariableOptions options;
  options.trainable = false;
  const DataType dtype = vars[0].dtype();
  auto power = [&](double beta) {
    return dtype == DataType::kDouble
               ? Tensor::Scalar<double>(beta)
               : Tensor::Scalar<float>(static_cast<float>(beta));
  };
  beta1_power_ =
      ops::Variable(s.WithOpName("beta1_power"), power(beta1_), options);
  beta2_power_ =
      ops::Variable(s.WithOpName("beta2_power"), power(beta2_), options);
  return scope.status();
}

Operation AdamOptimizer::ApplyDense(const Scope& scope, const Output& grad,
                                    const ops::Variable& var) {
  return ops::ResourceApplyAdam(scope, var.handle(), GetSlot(var, "m").handle(),
                                GetSlot(var, "v").handle(), beta1_power_,
                                beta2_power_, learning_rate_, beta1_, beta2_,
                                epsilon_, grad);
}

Operation AdamOptimizer::ApplySparse(const Scope& scope,
                                     const IndexedSlices& grad,
                                     const ops::Variable& var) {
  return ops::ResourceSparseApplyAdam(
      scope, var.handle(), GetSlot(var, "m").handle(),
      GetSlot(var, "v").handle(), beta1_power_, beta2_power_, learning_rate_,
      beta1_, beta2_, epsilon_, grad.values, grad.indices);
}

Operation AdamOptimizer::Finish(const Scope& scope,
                                const std::vector<Operation>& updates) {
  // The powers advance once every update of this step has used them.
  Scope s = scope.WithControlDependencies(updates);
  std::vector<Operation> all = updates;
  // Each power's update stays with the power (`scope` may be colocated with
  // the global step, on another ps).
  const Scope at1 = s.ColocateWith(beta1_power_.handle().op());
  const Scope at2 = s.ColocateWith(beta2_power_.handle().op());
  all.push_back(ops::Assign(at1.WithOpName("update_beta1_power"), beta1_power_,
                            ops::Mul(at1, beta1_power_, beta1_))
                    .op());
  all.push_back(ops::Assign(at2.WithOpName("update_beta2_power"), beta2_power_,
                            ops::Mul(at2, beta2_power_, beta2_))
                    .op());
  return ops::Group(scope.WithOpName("update"), all);
}

RMSPropOptimizer::RMSPropOptimizer(const Input& learning_rate, double decay,
                                   double momentum, double epsilon,
                                   std::string name)
    : Optimizer(std::move(name)),
      learning_rate_(learning_rate),
      decay_(decay),
      momentum_(momentum),
      epsilon_(epsilon) {}

absl::Status RMSPropOptimizer::CreateSlots(
    const Scope& scope, const std::vector<ops::Variable>& vars) {
  for (const ops::Variable& v : vars) {
    DF_RETURN_IF_ERROR(GetOrCreateSlot(scope, v, "rms", name(), 1.0).status());
    DF_RETURN_IF_ERROR(
        GetOrCreateSlot(scope, v, "momentum", name() + "_1", 0.0).status());
  }
  return absl::OkStatus();
}

Operation RMSPropOptimizer::ApplyDense(const Scope& scope, const Output& grad,
                                       const ops::Variable& var) {
  return ops::ResourceApplyRMSProp(
      scope, var.handle(), GetSlot(var, "rms").handle(),
      GetSlot(var, "momentum").handle(), learning_rate_, decay_, momentum_,
      epsilon_, grad);
}

Operation RMSPropOptimizer::ApplySparse(const Scope& scope,
                                        const IndexedSlices& grad,
                                        const ops::Variable& var) {
  return ops::ResourceSparseApplyRMSProp(
      scope, var.handle(), GetSlot(var, "rms").handle(),
      GetSlot(var, "momentum").handle(), learning_rate_, decay_, momentum_,
      epsilon_, grad.values, grad.indices);
}

FtrlOptimizer::FtrlOptimizer(const Input& learning_rate,
                             double learning_rate_power,
                             double initial_accumulator_value,
                             double l1_regularization_strength,
                             double l2_regularization_strength,
                             std::string name)
    : Optimizer(std::move(name)),
      learning_rate_(learning_rate),
      lr_power_(learning_rate_power),
      initial_accumulator_value_(initial_accumulator_value),
      l1_(l1_regularization_strength),
      l2_(l2_regularization_strength) {}

absl::Status FtrlOptimizer::CreateSlots(
    const Scope& scope, const std::vector<ops::Variable>& vars) {
  if (!(lr_power_ <= 0) || !(initial_accumulator_value_ >= 0) || !(l1_ >= 0) ||
      !(l2_ >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        name(), ": needs learning_rate_power <= 0 (got ", lr_power_,
        "), initial_accumulator_value >= 0 (got ", initial_accumulator_value_,
        ") and l1, l2 >= 0 (got ", l1_, ", ", l2_, ")"));
  }
  for (const ops::Variable& v : vars) {
    DF_RETURN_IF_ERROR(
        GetOrCreateSlot(scope, v, "accum", name(), initial_accumulator_value_)
            .status());
    DF_RETURN_IF_ERROR(
        GetOrCreateSlot(scope, v, "linear", name() + "_1", 0.0).status());
  }
  return absl::OkStatus();
}

Operation FtrlOptimizer::ApplyDense(const Scope& scope, const Output& grad,
                                    const ops::Variable& var) {
  return ops::ResourceApplyFtrl(scope, var.handle(),
                                GetSlot(var, "accum").handle(),
                                GetSlot(var, "linear").handle(), grad,
                                learning_rate_, l1_, l2_, lr_power_);
}

Operation FtrlOptimizer::ApplySparse(const Scope& scope,
                                     const IndexedSlices& grad,
                                     const ops::Variable& var) {
  return ops::ResourceSparseApplyFtrl(
      scope, var.handle(), GetSlot(var, "accum").handle(),
      GetSlot(var, "linear").handle(), grad.values, grad.indices,
      learning_rate_, l1_, l2_, lr_power_);
}

}  // namespace train
}  // namespace distflow
