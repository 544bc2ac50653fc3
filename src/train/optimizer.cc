// Optimizer: slots and ApplyGradients. ComputeGradients and Minimize are in
// minimize.cc.
#include "distflow/train/optimizer.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/graph.h"
#include "graph/node_builder.h"

namespace distflow {
namespace train {

void Optimizer::UseGraph(const Scope& scope) {
  if (graph_ != scope.graph()) {
    graph_ = scope.graph();
    slots_.clear();
  }
}

ops::Variable Optimizer::GetSlot(const ops::Variable& var,
                                 const std::string& slot_name) const {
  auto by_var = slots_.find(var.var_name());
  if (by_var == slots_.end()) return ops::Variable();
  auto it = by_var->second.find(slot_name);
  return it == by_var->second.end() ? ops::Variable() : it->second;
}

absl::StatusOr<ops::Variable> Optimizer::GetOrCreateSlot(
    const Scope& scope, const ops::Variable& var, const std::string& slot_name,
    const std::string& op_name, double initial_value) {
  ops::Variable existing = GetSlot(var, slot_name);
  if (existing.valid()) return existing;
  auto shape = var.shape().AsTensorShape();
  if (!shape.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name_, " needs the shape of variable '", var.var_name(),
                     "' to create its slot '", slot_name,
                     "', but it is only known as ", var.shape().DebugString(),
                     "; give the variable a fully defined "
                     "initial value"));
  }
  // Beside the variable, named after it, outside any control dependencies of
  // the caller (the initializer must run on its own).
  Scope s = scope.WithNoControlDependencies()
                .NewSubScopeOf(var.handle().op())
                .ColocateWith(var.handle().op());
  Tensor fill(var.dtype(), TensorShape());
  if (var.dtype() == DataType::kFloat) {
    fill.scalar<float>() = static_cast<float>(initial_value);
  } else if (var.dtype() == DataType::kDouble) {
    fill.scalar<double>() = initial_value;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(name_, " trains float32 and float64 variables, but '",
                     var.var_name(), "' is ", DataTypeName(var.dtype())));
  }
  Output init = ops::Fill(s.WithOpName(op_name + "/Initializer"),
                          Tensor::Vector<int64_t>(shape->dim_sizes()), fill);
  ops::VariableOptions options;
  options.trainable = false;
  ops::Variable slot(s.WithOpName(op_name), init, options);
  if (!scope.ok()) return scope.status();
  slots_[var.var_name()][slot_name] = slot;
  return slot;
}

Operation Optimizer::Finish(const Scope& scope,
                            const std::vector<Operation>& updates) {
  return ops::Group(scope.WithOpName("update"), updates);
}

absl::StatusOr<Operation> Optimizer::ApplyGradients(
    const Scope& scope, const std::vector<GradAndVar>& grads_and_vars,
    const ops::Variable& global_step) {
  DF_RETURN_IF_ERROR(scope.status());
  UseGraph(scope);
  std::vector<GradAndVar> todo;
  std::vector<std::string> names;
  for (const auto& [grad, var] : grads_and_vars) {
    if (!var.handle().valid()) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ".ApplyGradients: an invalid variable"));
    }
    names.push_back(var.var_name());
    if (grad.has_value()) todo.push_back({grad, var});
  }
  if (todo.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        name_, ": no gradient for any of the variables [",
        absl::StrJoin(names, ", "), "]; check that the loss depends on them"));
  }
  std::vector<ops::Variable> vars;
  for (const auto& gv : todo) vars.push_back(gv.second);
  Scope opt = scope.NewSubScope(name_);
  DF_RETURN_IF_ERROR(CreateSlots(opt.WithNoControlDependencies(), vars));

  std::vector<Operation> updates;
  for (const auto& [grad, var] : todo) {
    Scope s = opt.NewSubScope("update_" + var.var_name())
                  .ColocateWith(var.handle().op());
    const DataType gtype =
        grad.is_sparse() ? grad.sparse().values.dtype() : grad.dense().dtype();
    if (gtype != var.dtype()) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": the gradient of variable '", var.var_name(),
                       "' is ", DataTypeName(gtype), " but the variable is ",
                       DataTypeName(var.dtype())));
    }
    updates.push_back(grad.is_sparse() ? ApplySparse(s, grad.sparse(), var)
                                       : ApplyDense(s, grad.dense(), var));
  }
  DF_RETURN_IF_ERROR(scope.status());
  // With a global step, the ops that end the step (the group of updates, the
  // step's increment, the train op) live on its task, a ps in between-graph
  // training: the updates' completion then need not cross to the worker and
  // back before the increment, which saves two transfers and a round trip
  // every step.
  const Scope end = global_step.handle().valid()
                        ? opt.ColocateWith(global_step.handle().op())
                        : opt;
  Operation done = Finish(end, updates);
  if (global_step.handle().valid()) {
    done = ops::AssignAdd(end.WithControlDependencies({done}), global_step,
                          int64_t{1})
               .op();
  }
  const Scope train_scope = global_step.handle().valid()
                                ? scope.ColocateWith(global_step.handle().op())
                                : scope;
  Operation train_op = NodeBuilder(train_scope, "NoOp", "train_op")
                           .ControlInput(done)
                           .Finalize();
  DF_RETURN_IF_ERROR(scope.status());
  return train_op;
}

}  // namespace train
}  // namespace distflow
