// Training ops: in-place optimizer updates of resource variables.
//
// Every op of this family has the same layout, which the kernels rely on: the
// variable and its slots come first (resource inputs, in the order the op
// lists them), then the hyperparameters (scalars of type T), the gradient
// ("grad", or "delta" for plain gradient descent) and, for the sparse forms,
// the row indices ("indices", right after the gradient). The ops have no
// outputs: run them as targets, or depend on them.
#include "distflow/ops/training_ops.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/node_builder.h"
#include "graph/ops/op_families.h"
#include "graph/shape_inference.h"

namespace distflow {
namespace {

// What an input of a training op is.
enum class Role { kVariable, kScalar, kGradient, kIndices };

struct TrainingOpSpec {
  const char* dense_name;
  const char* sparse_name;
  // Resource inputs: the variable first, then its slots.
  std::vector<const char*> variables;
  // The remaining inputs in order, "grad"/"delta" marking the gradient; the
  // sparse form inserts "indices" after it.
  std::vector<const char*> rest;
  bool has_nesterov = false;
};

const std::vector<TrainingOpSpec>& Specs() {
  static const auto* specs = new std::vector<TrainingOpSpec>{
      {"ResourceApplyGradientDescent",
       "ResourceSparseApplyGradientDescent",
       {"var"},
       {"alpha", "delta"}},
      {"ResourceApplyMomentum",
       "ResourceSparseApplyMomentum",
       {"var", "accum"},
       {"lr", "grad", "momentum"},
       /*has_nesterov=*/true},
      {"ResourceApplyAdagrad",
       "ResourceSparseApplyAdagrad",
       {"var", "accum"},
       {"lr", "grad"}},
      {"ResourceApplyAdam",
       "ResourceSparseApplyAdam",
       {"var", "m", "v"},
       {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon",
        "grad"}},
      {"ResourceApplyRMSProp",
       "ResourceSparseApplyRMSProp",
       {"var", "ms", "mom"},
       {"lr", "rho", "momentum", "epsilon", "grad"}},
      {"ResourceApplyFtrl",
       "ResourceSparseApplyFtrl",
       {"var", "accum", "linear"},
       {"grad", "lr", "l1", "l2", "lr_power"}},
  };
  return *specs;
}

bool IsGradientName(const std::string& name) {
  return name == "grad" || name == "delta";
}

// Checks the shapes an op of this family receives: the slots and the gradient
// against the variable, the hyperparameters against scalars, the sparse
// gradient's rows against its indices.
ShapeFn TrainingShapeFn(std::vector<std::string> names,
                        std::vector<Role> roles) {
  return [names, roles](InferenceContext* c) -> absl::Status {
    const PartialTensorShape& var = c->input_handle_shape(0);
    int grad = -1, indices = -1;
    for (int i = 0; i < c->num_inputs(); ++i) {
      switch (roles[i]) {
        case Role::kVariable:
          if (i > 0 && !var.IsCompatibleWith(c->input_handle_shape(i))) {
            return absl::InvalidArgumentError(
                absl::StrCat("slot '", names[i], "' has shape ",
                             c->input_handle_shape(i).DebugString(),
                             " but the variable has shape ", var.DebugString(),
                             "; slots must have the variable's shape"));
          }
          break;
        case Role::kScalar:
          if (c->input(i).dims() > 0) {
            return absl::InvalidArgumentError(absl::StrCat(
                "hyperparameter '", names[i], "' must be a scalar, got shape ",
                c->input(i).DebugString()));
          }
          break;
        case Role::kGradient:
          grad = i;
          break;
        case Role::kIndices:
          indices = i;
          break;
      }
    }
    const PartialTensorShape& g = c->input(grad);
    if (indices < 0) {
      if (!var.IsCompatibleWith(g)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "gradient of shape ", g.DebugString(),
            " does not fit the variable of shape ", var.DebugString()));
      }
      return absl::OkStatus();
    }
    DF_RETURN_IF_ERROR(c->WithRank(indices, 1));
    const PartialTensorShape& idx = c->input(indices);
    if (g.unknown_rank()) return absl::OkStatus();
    if (g.dims() < 1) {
      return absl::InvalidArgumentError(
          "a sparse gradient must have a row dimension, got a scalar");
    }
    if (!idx.unknown_rank() && idx.dim_size(0) >= 0 && g.dim_size(0) >= 0 &&
        idx.dim_size(0) != g.dim_size(0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the sparse gradient has ", g.dim_size(0), " rows (shape ",
          g.DebugString(), ") but there are ", idx.dim_size(0), " indices"));
    }
    if (!var.unknown_rank()) {
      std::vector<int64_t> row(g.dim_sizes().begin() + 1, g.dim_sizes().end());
      std::vector<int64_t> var_row(var.dim_sizes().begin() + (var.dims() > 0),
                                   var.dim_sizes().end());
      auto a = PartialTensorShape::FromDims(row);
      auto b = PartialTensorShape::FromDims(var_row);
      if (var.dims() == 0 || !a.ok() || !b.ok() || !a->IsCompatibleWith(*b)) {
        return absl::InvalidArgumentError(
            absl::StrCat("sparse gradient rows of shape ", g.DebugString(),
                         " do not fit the rows of the variable of shape ",
                         var.DebugString()));
      }
    }
    return absl::OkStatus();
  };
}

OpDef BuildTrainingOpDef(const TrainingOpSpec& spec, bool sparse) {
  OpDefBuilder b(sparse ? spec.sparse_name : spec.dense_name);
  std::vector<std::string> names;
  std::vector<Role> roles;
  for (const char* v : spec.variables) {
    b.Input(v, DataType::kResource);
    names.push_back(v);
    roles.push_back(Role::kVariable);
  }
  for (const char* in : spec.rest) {
    const bool is_grad = IsGradientName(in);
    // The sparse forms call their gradient "grad" (values of the listed rows).
    const std::string name = is_grad && sparse ? "grad" : in;
    b.Input(name, "T");
    names.push_back(name);
    roles.push_back(is_grad ? Role::kGradient : Role::kScalar);
    if (is_grad && sparse) {
      b.Input("indices", "Tindices");
      names.push_back("indices");
      roles.push_back(Role::kIndices);
    }
  }
  b.TypeAttr("T", kFloatingTypes);
  if (sparse) b.TypeAttr("Tindices", {DataType::kInt32, DataType::kInt64});
  // Kept for compatibility with TensorFlow graphs: the kernels always lock.
  b.Attr("use_locking", MakeAttr(true));
  if (spec.has_nesterov) b.Attr("use_nesterov", MakeAttr(false));
  b.Stateful();
  b.Summary(sparse ? "Updates the listed rows of a variable and its slots in "
                     "place (repeated rows: their gradients add up)."
                   : "Updates a variable and its slots in place.");
  b.SetShapeFn(TrainingShapeFn(std::move(names), std::move(roles)));
  return std::move(b).Build();
}

// Adds a training op: `vars` are the handles (variable, then slots), `values`
// the other inputs in the op's order. Literals take the gradient's type.
Operation AddTrainingOp(const Scope& scope, const std::string& op,
                        const std::vector<Output>& vars,
                        const std::vector<Input>& values,
                        bool use_nesterov = false) {
  auto def = OpRegistry::Global()->LookUp(op);
  DF_CHECK(def.ok()) << def.status();
  for (size_t i = 0; i < vars.size(); ++i) {
    if (vars[i].valid() && vars[i].dtype() != DataType::kResource) {
      scope.UpdateStatus(absl::InvalidArgumentError(absl::StrCat(
          op, ": input '", (*def)->inputs[i].name,
          "' must be a variable handle (Variable::handle()), got ",
          DataTypeName(vars[i].dtype()), " output ", vars[i].name())));
      return Operation();
    }
    if (!vars[i].valid()) {
      scope.UpdateStatus(absl::InvalidArgumentError(absl::StrCat(
          op, ": input '", (*def)->inputs[i].name, "' is invalid")));
      return Operation();
    }
  }
  Scope colocated = scope.ColocateWith(vars[0].op());
  // The gradient goes first so that number literals take its type.
  int grad = -1;
  std::vector<Input> typed;
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string& name = (*def)->inputs[vars.size() + i].name;
    if (IsGradientName(name)) grad = static_cast<int>(i);
  }
  DF_CHECK(grad >= 0) << op;
  typed.push_back(values[grad]);
  std::vector<int> typed_pos(values.size(), -1);
  typed_pos[grad] = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string& name = (*def)->inputs[vars.size() + i].name;
    if (static_cast<int>(i) == grad || name == "indices") continue;
    typed_pos[i] = static_cast<int>(typed.size());
    typed.push_back(values[i]);
  }
  std::vector<Output> typed_out = AsOutputsOfOneType(colocated, typed);
  NodeBuilder b(colocated, op, op);
  for (const Output& v : vars) b.Input(v);
  for (size_t i = 0; i < values.size(); ++i) {
    b.Input(typed_pos[i] >= 0 ? typed_out[typed_pos[i]]
                              : AsOutput(colocated, values[i]));
  }
  if (def.value()->FindAttr("use_nesterov") != nullptr) {
    b.Attr("use_nesterov", use_nesterov);
  }
  return b.Finalize();
}

}  // namespace

void RegisterTrainingOps(OpRegistry* r) {
  for (const TrainingOpSpec& spec : Specs()) {
    for (bool sparse : {false, true}) {
      absl::Status s = r->Register(BuildTrainingOpDef(spec, sparse));
      DF_CHECK(s.ok()) << s;
    }
  }
}

namespace ops {

Operation ResourceApplyGradientDescent(const Scope& scope, const Output& var,
                                       const Input& alpha, const Input& delta) {
  return AddTrainingOp(scope, "ResourceApplyGradientDescent", {var},
                       {alpha, delta});
}
Operation ResourceApplyMomentum(const Scope& scope, const Output& var,
                                const Output& accum, const Input& lr,
                                const Input& grad, const Input& momentum,
                                bool use_nesterov) {
  return AddTrainingOp(scope, "ResourceApplyMomentum", {var, accum},
                       {lr, grad, momentum}, use_nesterov);
}
Operation ResourceApplyAdagrad(const Scope& scope, const Output& var,
                               const Output& accum, const Input& lr,
                               const Input& grad) {
  return AddTrainingOp(scope, "ResourceApplyAdagrad", {var, accum}, {lr, grad});
}
Operation ResourceApplyAdam(const Scope& scope, const Output& var,
                            const Output& m, const Output& v,
                            const Input& beta1_power, const Input& beta2_power,
                            const Input& lr, const Input& beta1,
                            const Input& beta2, const Input& epsilon,
                            const Input& grad) {
  return AddTrainingOp(
      scope, "ResourceApplyAdam", {var, m, v},
      {beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad});
}
Operation ResourceApplyRMSProp(const Scope& scope, const Output& var,
                               const Output& ms, const Output& mom,
                               const Input& lr, const Input& rho,
                               const Input& momentum, const Input& epsilon,
                               const Input& grad) {
  return AddTrainingOp(scope, "ResourceApplyRMSProp", {var, ms, mom},
                       {lr, rho, momentum, epsilon, grad});
}
Operation ResourceApplyFtrl(const Scope& scope, const Output& var,
                            const Output& accum, const Output& linear,
                            const Input& grad, const Input& lr, const Input& l1,
                            const Input& l2, const Input& lr_power) {
  return AddTrainingOp(scope, "ResourceApplyFtrl", {var, accum, linear},
                       {grad, lr, l1, l2, lr_power});
}

Operation ResourceSparseApplyGradientDescent(const Scope& scope,
                                             const Output& var,
                                             const Input& alpha,
                                             const Input& grad,
                                             const Input& indices) {
  return AddTrainingOp(scope, "ResourceSparseApplyGradientDescent", {var},
                       {alpha, grad, indices});
}
Operation ResourceSparseApplyMomentum(const Scope& scope, const Output& var,
                                      const Output& accum, const Input& lr,
                                      const Input& grad, const Input& indices,
                                      const Input& momentum,
                                      bool use_nesterov) {
  return AddTrainingOp(scope, "ResourceSparseApplyMomentum", {var, accum},
                       {lr, grad, indices, momentum}, use_nesterov);
}
Operation ResourceSparseApplyAdagrad(const Scope& scope, const Output& var,
                                     const Output& accum, const Input& lr,
                                     const Input& grad, const Input& indices) {
  return AddTrainingOp(scope, "ResourceSparseApplyAdagrad", {var, accum},
                       {lr, grad, indices});
}
Operation ResourceSparseApplyAdam(const Scope& scope, const Output& var,
                                  const Output& m, const Output& v,
                                  const Input& beta1_power,
                                  const Input& beta2_power, const Input& lr,
                                  const Input& beta1, const Input& beta2,
                                  const Input& epsilon, const Input& grad,
                                  const Input& indices) {
  return AddTrainingOp(
      scope, "ResourceSparseApplyAdam", {var, m, v},
      {beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, indices});
}
Operation ResourceSparseApplyRMSProp(const Scope& scope, const Output& var,
                                     const Output& ms, const Output& mom,
                                     const Input& lr, const Input& rho,
                                     const Input& momentum,
                                     const Input& epsilon, const Input& grad,
                                     const Input& indices) {
  return AddTrainingOp(scope, "ResourceSparseApplyRMSProp", {var, ms, mom},
                       {lr, rho, momentum, epsilon, grad, indices});
}
Operation ResourceSparseApplyFtrl(const Scope& scope, const Output& var,
                                  const Output& accum, const Output& linear,
                                  const Input& grad, const Input& indices,
                                  const Input& lr, const Input& l1,
                                  const Input& l2, const Input& lr_power) {
  return AddTrainingOp(scope, "ResourceSparseApplyFtrl", {var, accum, linear},
                       {grad, indices, lr, l1, l2, lr_power});
}

}  // namespace ops
}  // namespace distflow
