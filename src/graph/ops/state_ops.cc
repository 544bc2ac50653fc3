// Variables: a handle op, reads, assignments and the global initializer.
//
// A variable is a resource on one device. VarHandleOp yields a handle to it;
// ReadVariableOp gives its current value; the Assign*VariableOp ops update it
// and yield the new value. Every op that touches the variable is colocated with
// its handle, so it runs where the variable lives.
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/graph.h"
#include "graph/node_builder.h"
#include "graph/ops/op_families.h"
#include "graph/shape_inference.h"

namespace distflow {
namespace {

// Output 0 has the shape of the variable behind input 0; input 1 (the value),
// if any, must fit.
absl::Status VariableValueShape(InferenceContext* c) {
  const PartialTensorShape& var_shape = c->input_handle_shape(0);
  if (c->num_inputs() > 1 && !var_shape.IsCompatibleWith(c->input(1))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "value of shape ", c->input(1).DebugString(),
        " does not fit the variable of shape ", var_shape.DebugString()));
  }
  c->set_output(0, var_shape);
  return absl::OkStatus();
}

// A vector of unknown length, after checking that there is one name per
// flag.
absl::Status ReportedNamesShape(InferenceContext* c) {
  std::vector<std::string> names;
  DF_RETURN_IF_ERROR(c->GetAttr("var_names", &names));
  if (static_cast<int>(names.size()) != c->num_inputs()) {
    return absl::InvalidArgumentError(
        absl::StrCat("var_names has ", names.size(), " names for ",
                     c->num_inputs(), " is_initialized inputs"));
  }
  c->set_output(0, PartialTensorShape({-1}));
  return absl::OkStatus();
}

Output UpdateVariable(const Scope& scope, const char* op,
                      const ops::Variable& var, const Input& value) {
  if (!var.handle().valid()) {
    scope.UpdateStatus(absl::InvalidArgumentError(
        absl::StrCat(op, " of an invalid variable")));
    return Output();
  }
  Scope colocated = scope.ColocateWith(var.handle().op());
  // Literals take the variable's type: AssignAdd(s, step, 1) works for an int64
  // step.
  Output v = AsOutputsOfOneType(colocated, {Output(var), value})[1];
  return NodeBuilder(colocated, op, op)
      .Input(var.handle())
      .Input(v)
      .Attr("dtype", var.dtype())
      .Finalize()
      .output(0);
}

}  // namespace

void RegisterStateOps(OpRegistry* r) {
  AddOp(r, OpDefBuilder("VarHandleOp")
               .Output("resource", DataType::kResource)
               .TypeAttr("dtype")
               .Attr("shape", AttrType::kShape)
               .Attr("container", MakeAttr(""))
               .Attr("shared_name", MakeAttr(""))
               .Stateful()
               .Summary("A handle to a variable; the variable is named by "
                        "shared_name, else the node.")
               .SetShapeFn(shape_fns::Scalar));
  AddOp(r, OpDefBuilder("ReadVariableOp")
               .Input("resource", DataType::kResource)
               .Output("value", "dtype")
               .TypeAttr("dtype")
               .Stateful()
               .SetShapeFn(VariableValueShape));
  for (const char* name :
       {"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"}) {
    OpDefBuilder b(name);
    b.Input("resource", DataType::kResource)
        .Input("value", "dtype")
        .Output("updated", "dtype")
        .Stateful()
        .SetShapeFn(VariableValueShape);
    if (std::string(name) == "AssignVariableOp") {
      b.TypeAttr("dtype");
    } else {
      b.TypeAttr("dtype", kNumericTypes);
    }
    AddOp(r, std::move(b));
  }
  AddOp(r, OpDefBuilder("VarIsInitializedOp")
               .Input("resource", DataType::kResource)
               .Output("is_initialized", DataType::kBool)
               .Stateful()
               .SetShapeFn(shape_fns::Scalar));
  AddOp(r, OpDefBuilder("ReportUninitializedVariables")
               .InputList("is_initialized", "T", "N")
               .Output("uninitialized", DataType::kString)
               .TypeAttr("T", {DataType::kBool})
               .IntAttr("N", 1)
               .Attr("var_names", AttrType::kStringList)
               .Summary("The names (from var_names) of the variables whose "
                        "is_initialized input is false.")
               .SetShapeFn(ReportedNamesShape));
}

namespace ops {

Variable::Variable(const Scope& scope, DataType dtype,
                   const PartialTensorShape& shape,
                   const VariableOptions& options) {
  Operation handle = NodeBuilder(scope, "VarHandleOp", "Variable")
                         .Attr("dtype", dtype)
                         .Attr("shape", shape)
                         .Finalize();
  if (!handle.valid()) return;
  handle_ = handle.output(0);
  scope.graph()->AddToCollection(kGlobalVariablesCollection, handle.name());
  if (options.trainable) {
    scope.graph()->AddToCollection(kTrainableVariablesCollection,
                                   handle.name());
  }
  Output read =
      NodeBuilder(
          scope.NewSubScopeOf(handle).ColocateWith(handle).WithOpName("read"),
          "ReadVariableOp", "read")
          .Input(handle_)
          .Attr("dtype", dtype)
          .Finalize()
          .output(0);
  static_cast<Output&>(*this) = read;
}

Variable::Variable(const Scope& scope, const Input& initial_value,
                   const VariableOptions& options) {
  const bool is_value = !initial_value.is_output();
  if (!is_value && !initial_value.output().valid()) {
    scope.UpdateStatus(
        absl::InvalidArgumentError("Variable: the initial value is invalid"));
    return;
  }
  const DataType dtype = is_value ? initial_value.tensor().dtype()
                                  : initial_value.output().dtype();
  const PartialTensorShape shape =
      is_value ? PartialTensorShape(initial_value.tensor().shape())
               : initial_value.output().shape();
  *this = Variable(scope, dtype, shape, options);
  if (!handle_.valid()) return;
  Scope inner = scope.NewSubScopeOf(handle_.op()).ColocateWith(handle_.op());
  // A value written in code becomes the constant "<variable>/initial_value"
  // beside the variable.
  Output init =
      is_value ? ops::Const(inner.WithOpName("initial_value"), initial_value)
               : initial_value.output();
  initializer_ =
      NodeBuilder(inner.WithOpName("Assign"), "AssignVariableOp", "Assign")
          .Input(handle_)
          .Input(init)
          .Attr("dtype", dtype)
          .Finalize();
  if (initializer_.valid()) {
    scope.graph()->AddToCollection(kVariableInitializersCollection,
                                   initializer_.name());
  }
}

Variable Variable::FromHandle(const Output& handle) {
  Variable var;
  Node* node = handle.node();
  if (node == nullptr || node->op() != "VarHandleOp") return var;
  // The constructors create the read op first among the handle's consumers.
  for (const OutEdge& e : node->out_edges()) {
    if (!e.is_control() && e.dst->op() == "ReadVariableOp") {
      static_cast<Output&>(var) = Output(e.dst, 0);
      break;
    }
  }
  if (!var.valid()) return var;
  var.handle_ = handle;
  // The initializer is the AssignVariableOp consumer named "<var>/Assign" (or
  // a unique variant of it), as the constructor names it; user assignments
  // are named after the scope.
  for (const OutEdge& e : node->out_edges()) {
    if (!e.is_control() && e.dst_input == 0 &&
        e.dst->op() == "AssignVariableOp" &&
        absl::StartsWith(e.dst->name(), node->name() + "/Assign")) {
      var.initializer_ = Operation(e.dst);
      break;
    }
  }
  return var;
}

namespace {
std::vector<Variable> VariablesOf(const Scope& scope, const char* key) {
  std::vector<Variable> vars;
  for (const std::string& name : scope.graph()->GetCollection(key)) {
    Node* node = scope.graph()->FindNode(name);
    if (node == nullptr) continue;
    Variable v = Variable::FromHandle(Output(node, 0));
    if (v.valid()) vars.push_back(v);
  }
  return vars;
}
}  // namespace

std::vector<Variable> GlobalVariables(const Scope& scope) {
  return VariablesOf(scope, kGlobalVariablesCollection);
}
std::vector<Variable> TrainableVariables(const Scope& scope) {
  return VariablesOf(scope, kTrainableVariablesCollection);
}

Output Assign(const Scope& scope, const Variable& var, const Input& value) {
  return UpdateVariable(scope, "AssignVariableOp", var, value);
}
Output AssignAdd(const Scope& scope, const Variable& var, const Input& delta) {
  return UpdateVariable(scope, "AssignAddVariableOp", var, delta);
}
Output AssignSub(const Scope& scope, const Variable& var, const Input& delta) {
  return UpdateVariable(scope, "AssignSubVariableOp", var, delta);
}

Output IsVariableInitialized(const Scope& scope, const Variable& var) {
  return NodeBuilder(scope.ColocateWith(var.handle().op()),
                     "VarIsInitializedOp", "IsVariableInitialized")
      .Input(var.handle())
      .Finalize()
      .output(0);
}

Output ReportUninitializedVariables(const Scope& scope,
                                    const std::vector<Variable>& vars) {
  if (vars.empty()) {
    return ops::Const(scope.WithOpName("report_uninitialized_variables"),
                      Tensor(DataType::kString, TensorShape({0})));
  }
  // Each flag is computed beside its variable (on its ps task); only the
  // flags travel to the op that names the missing ones.
  std::vector<Output> flags;
  std::vector<std::string> names;
  for (const Variable& var : vars) {
    flags.push_back(IsVariableInitialized(scope, var));
    names.push_back(var.var_name());
  }
  return NodeBuilder(scope, "ReportUninitializedVariables",
                     "report_uninitialized_variables")
      .Input(flags)
      .Attr("var_names", names)
      .Finalize()
      .output(0);
}

Operation GlobalVariablesInitializer(const Scope& scope) {
  NodeBuilder b(scope, "NoOp", "init");
  for (const std::string& name :
       scope.graph()->GetCollection(kVariableInitializersCollection)) {
    b.ControlInput(Operation(scope.graph()->FindNode(name)));
  }
  return b.Finalize();
}

}  // namespace ops
}  // namespace distflow
