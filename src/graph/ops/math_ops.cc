// Elementwise arithmetic, comparisons, logic, casts, bias addition and matrix
// products. Reductions live in reduction_ops.cc.
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/node_builder.h"
#include "graph/ops/op_families.h"
#include "graph/shape_inference.h"

namespace distflow {
namespace {

const std::vector<DataType> kNumericAndBool = {
    DataType::kFloat, DataType::kDouble, DataType::kInt32,
    DataType::kInt64, DataType::kUInt8,  DataType::kBool};

absl::Status MatMulShape(InferenceContext* c) {
  bool ta = false, tb = false;
  DF_RETURN_IF_ERROR(c->GetAttr("transpose_a", &ta));
  DF_RETURN_IF_ERROR(c->GetAttr("transpose_b", &tb));
  const PartialTensorShape& a = c->input(0);
  const PartialTensorShape& b = c->input(1);
  for (int i = 0; i < 2; ++i) {
    const PartialTensorShape& s = c->input(i);
    if (!s.unknown_rank() && s.dims() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          i == 0 ? "a" : "b", " must be a matrix (rank 2), got shape ",
          s.DebugString()));
    }
  }
  const int64_t m = a.unknown_rank() ? -1 : a.dim_size(ta ? 1 : 0);
  const int64_t ka = a.unknown_rank() ? -1 : a.dim_size(ta ? 0 : 1);
  const int64_t kb = b.unknown_rank() ? -1 : b.dim_size(tb ? 1 : 0);
  const int64_t n = b.unknown_rank() ? -1 : b.dim_size(tb ? 0 : 1);
  if (ka >= 0 && kb >= 0 && ka != kb) {
    return absl::InvalidArgumentError(
        absl::StrCat("inner dimensions differ: a", ta ? " (transposed)" : "",
                     " is ", a.DebugString(), ", b", tb ? " (transposed)" : "",
                     " is ", b.DebugString(), " (", ka, " vs ", kb, ")"));
  }
  c->set_output(0, PartialTensorShape({m, n}));
  return absl::OkStatus();
}

absl::Status SelectShape(InferenceContext* c) {
  DF_ASSIGN_OR_RETURN(PartialTensorShape te,
                      BroadcastShapes(c->input(1), c->input(2)));
  auto all = BroadcastShapes(c->input(0), te);
  if (!all.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cond of shape ", c->input(0).DebugString(),
        " does not broadcast with t and e of shape ", te.DebugString()));
  }
  c->set_output(0, *all);
  return absl::OkStatus();
}

absl::Status BroadcastGradientArgsShape(InferenceContext* c) {
  for (int i = 0; i < 2; ++i) DF_RETURN_IF_ERROR(c->WithRank(i, 1));
  c->set_output(0, PartialTensorShape({-1}));
  c->set_output(1, PartialTensorShape({-1}));
  return absl::OkStatus();
}

absl::Status BiasAddShape(InferenceContext* c) {
  const PartialTensorShape& value = c->input(0);
  const PartialTensorShape& bias = c->input(1);
  if (!value.unknown_rank() && value.dims() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "value must have rank >= 1, got shape ", value.DebugString()));
  }
  DF_RETURN_IF_ERROR(c->WithRank(1, 1));
  if (!value.unknown_rank() && !bias.unknown_rank()) {
    const int64_t cv = value.dim_size(value.dims() - 1);
    const int64_t cb = bias.dim_size(0);
    if (cv >= 0 && cb >= 0 && cv != cb) {
      return absl::InvalidArgumentError(
          absl::StrCat("bias of shape ", bias.DebugString(),
                       " must match the last dimension of value of shape ",
                       value.DebugString()));
    }
  }
  c->set_output(0, value);
  return absl::OkStatus();
}

absl::Status BiasAddGradShape(InferenceContext* c) {
  const PartialTensorShape& g = c->input(0);
  if (g.unknown_rank()) {
    c->set_output(0, PartialTensorShape({-1}));
    return absl::OkStatus();
  }
  if (g.dims() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "out_backprop must have rank >= 1, got shape ", g.DebugString()));
  }
  c->set_output(0, PartialTensorShape({g.dim_size(g.dims() - 1)}));
  return absl::OkStatus();
}

Output BinaryOp(const Scope& scope, const char* op, const Input& x,
                const Input& y) {
  std::vector<Output> in = AsOutputsOfOneType(scope, {x, y});
  return NodeBuilder(scope, op, op)
      .Input(in[0])
      .Input(in[1])
      .Finalize()
      .output(0);
}

Output UnaryOp(const Scope& scope, const char* op, const Input& x) {
  return NodeBuilder(scope, op, op)
      .Input(AsOutput(scope, x))
      .Finalize()
      .output(0);
}

void AddBinary(OpRegistry* r, const char* name, std::vector<DataType> types,
               bool bool_output, const char* summary) {
  OpDefBuilder b(name);
  b.Input("x", "T").Input("y", "T").TypeAttr("T", std::move(types));
  if (bool_output) {
    b.Output("z", DataType::kBool);
  } else {
    b.Output("z", "T");
  }
  AddOp(r,
        std::move(b.Summary(summary).SetShapeFn(shape_fns::BroadcastBinary)));
}

void AddUnary(OpRegistry* r, const char* name, std::vector<DataType> types) {
  AddOp(r, OpDefBuilder(name)
               .Input("x", "T")
               .Output("y", "T")
               .TypeAttr("T", std::move(types))
               .Summary("Elementwise.")
               .SetShapeFn(shape_fns::UnchangedShape));
}

}  // namespace

void RegisterMathOps(OpRegistry* r) {
  constexpr const char* kBroadcast =
      "Elementwise, with numpy-style broadcasting.";
  for (const char* name : {"Add", "Sub", "Mul", "Div", "Pow", "Maximum",
                           "Minimum", "SquaredDifference"}) {
    AddBinary(r, name, kNumericTypes, false, kBroadcast);
  }
  for (const char* name : {"Equal", "NotEqual"}) {
    AddBinary(r, name, kNumericAndBool, true, kBroadcast);
  }
  for (const char* name : {"Less", "LessEqual", "Greater", "GreaterEqual"}) {
    AddBinary(r, name, kNumericTypes, true, kBroadcast);
  }
  for (const char* name : {"LogicalAnd", "LogicalOr"}) {
    AddOp(r, OpDefBuilder(name)
                 .Input("x", DataType::kBool)
                 .Input("y", DataType::kBool)
                 .Output("z", DataType::kBool)
                 .Summary(kBroadcast)
                 .SetShapeFn(shape_fns::BroadcastBinary));
  }
  AddOp(r, OpDefBuilder("LogicalNot")
               .Input("x", DataType::kBool)
               .Output("y", DataType::kBool)
               .SetShapeFn(shape_fns::UnchangedShape));
  AddOp(r,
        OpDefBuilder("Select")
            .Input("condition", DataType::kBool)
            .Input("t", "T")
            .Input("e", "T")
            .Output("output", "T")
            .TypeAttr("T", kNumericAndBool)
            .Summary("condition ? t : e, elementwise, broadcasting all three.")
            .SetShapeFn(SelectShape));
  AddOp(r, OpDefBuilder("BroadcastGradientArgs")
               .Input("s0", "T")
               .Input("s1", "T")
               .Output("r0", "T")
               .Output("r1", "T")
               .TypeAttr("T", {DataType::kInt32, DataType::kInt64})
               .Summary("Axes to sum the gradients of broadcast inputs over.")
               .SetShapeFn(BroadcastGradientArgsShape));

  for (const char* name : {"Neg", "Square", "Abs", "Sign"}) {
    AddUnary(r, name, kNumericTypes);
  }
  for (const char* name :
       {"Exp", "Log", "Sqrt", "Rsqrt", "Reciprocal", "Floor"}) {
    AddUnary(r, name, kFloatingTypes);
  }
  AddOp(r, OpDefBuilder("Cast")
               .Input("x", "SrcT")
               .Output("y", "DstT")
               .TypeAttr("SrcT", kNumericAndBool)
               .TypeAttr("DstT", kNumericAndBool)
               .SetShapeFn(shape_fns::UnchangedShape));

  AddOp(r, OpDefBuilder("BiasAdd")
               .Input("value", "T")
               .Input("bias", "T")
               .Output("output", "T")
               .TypeAttr("T", kNumericTypes)
               .Summary("value [..., C] + bias [C].")
               .SetShapeFn(BiasAddShape));
  AddOp(r, OpDefBuilder("BiasAddGrad")
               .Input("out_backprop", "T")
               .Output("output", "T")
               .TypeAttr("T", kNumericTypes)
               .Summary("out_backprop [..., C] summed over all but the last "
                        "dimension.")
               .SetShapeFn(BiasAddGradShape));

  AddOp(r, OpDefBuilder("MatMul")
               .Input("a", "T")
               .Input("b", "T")
               .Output("product", "T")
               .TypeAttr("T", {DataType::kFloat, DataType::kDouble,
                               DataType::kInt32, DataType::kInt64})
               .Attr("transpose_a", MakeAttr(false))
               .Attr("transpose_b", MakeAttr(false))
               .SetShapeFn(MatMulShape));

  RegisterReductionOps(r);
}

namespace ops {

#define DISTFLOW_BINARY_OP_(Name)                                   \
  Output Name(const Scope& scope, const Input& x, const Input& y) { \
    return BinaryOp(scope, #Name, x, y);                            \
  }
DISTFLOW_BINARY_OP_(Add)
DISTFLOW_BINARY_OP_(Sub)
DISTFLOW_BINARY_OP_(Mul)
DISTFLOW_BINARY_OP_(Div)
DISTFLOW_BINARY_OP_(Pow)
DISTFLOW_BINARY_OP_(Maximum)
DISTFLOW_BINARY_OP_(Minimum)
DISTFLOW_BINARY_OP_(SquaredDifference)
DISTFLOW_BINARY_OP_(Equal)
DISTFLOW_BINARY_OP_(NotEqual)
DISTFLOW_BINARY_OP_(Less)
DISTFLOW_BINARY_OP_(LessEqual)
DISTFLOW_BINARY_OP_(Greater)
DISTFLOW_BINARY_OP_(GreaterEqual)
DISTFLOW_BINARY_OP_(LogicalAnd)
DISTFLOW_BINARY_OP_(LogicalOr)
#undef DISTFLOW_BINARY_OP_

#define DISTFLOW_UNARY_OP_(Name)                    \
  Output Name(const Scope& scope, const Input& x) { \
    return UnaryOp(scope, #Name, x);                \
  }
DISTFLOW_UNARY_OP_(LogicalNot)
DISTFLOW_UNARY_OP_(Neg)
DISTFLOW_UNARY_OP_(Exp)
DISTFLOW_UNARY_OP_(Log)
DISTFLOW_UNARY_OP_(Sqrt)
DISTFLOW_UNARY_OP_(Rsqrt)
DISTFLOW_UNARY_OP_(Square)
DISTFLOW_UNARY_OP_(Reciprocal)
DISTFLOW_UNARY_OP_(Abs)
DISTFLOW_UNARY_OP_(Sign)
DISTFLOW_UNARY_OP_(Floor)
DISTFLOW_UNARY_OP_(BiasAddGrad)
#undef DISTFLOW_UNARY_OP_

Output Select(const Scope& scope, const Input& cond, const Input& t,
              const Input& e) {
  Output c = AsOutput(scope, cond);
  std::vector<Output> te = AsOutputsOfOneType(scope, {t, e});
  return NodeBuilder(scope, "Select", "Select")
      .Input(c)
      .Input(te[0])
      .Input(te[1])
      .Finalize()
      .output(0);
}

BroadcastGradientArgsOutput BroadcastGradientArgs(const Scope& scope,
                                                  const Input& s0,
                                                  const Input& s1) {
  std::vector<Output> in = AsOutputsOfOneType(scope, {s0, s1});
  Operation op =
      NodeBuilder(scope, "BroadcastGradientArgs", "BroadcastGradientArgs")
          .Input(in[0])
          .Input(in[1])
          .Finalize();
  if (!op.valid()) return {};
  return {op.output(0), op.output(1)};
}

Output Cast(const Scope& scope, const Input& x, DataType dtype) {
  return NodeBuilder(scope, "Cast", "Cast")
      .Input(AsOutput(scope, x))
      .Attr("DstT", dtype)
      .Finalize()
      .output(0);
}

Output BiasAdd(const Scope& scope, const Input& value, const Input& bias) {
  return BinaryOp(scope, "BiasAdd", value, bias);
}

Output MatMul(const Scope& scope, const Input& a, const Input& b,
              const MatMulOptions& options) {
  std::vector<Output> in = AsOutputsOfOneType(scope, {a, b});
  return NodeBuilder(scope, "MatMul", "MatMul")
      .Input(in[0])
      .Input(in[1])
      .Attr("transpose_a", options.transpose_a)
      .Attr("transpose_b", options.transpose_b)
      .Finalize()
      .output(0);
}

}  // namespace ops
}  // namespace distflow
