// Elementwise arithmetic and matrix products.
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/node_builder.h"
#include "graph/ops/op_families.h"
#include "graph/shape_inference.h"

namespace distflow {
namespace {

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

Output BinaryOp(const Scope& scope, const char* op, const Input& x,
                const Input& y) {
  std::vector<Output> in = AsOutputsOfOneType(scope, {x, y});
  return NodeBuilder(scope, op, op)
      .Input(in[0])
      .Input(in[1])
      .Finalize()
      .output(0);
}

}  // namespace

void RegisterMathOps(OpRegistry* r) {
  for (const char* name : {"Add", "Sub", "Mul"}) {
    AddOp(r, OpDefBuilder(name)
                 .Input("x", "T")
                 .Input("y", "T")
                 .Output("z", "T")
                 .TypeAttr("T", kNumericTypes)
                 .Summary("Elementwise, with numpy-style broadcasting.")
                 .SetShapeFn(shape_fns::BroadcastBinary));
  }
  AddOp(r, OpDefBuilder("MatMul")
               .Input("a", "T")
               .Input("b", "T")
               .Output("product", "T")
               .TypeAttr("T", {DataType::kFloat, DataType::kDouble,
                               DataType::kInt32, DataType::kInt64})
               .Attr("transpose_a", MakeAttr(false))
               .Attr("transpose_b", MakeAttr(false))
               .SetShapeFn(MatMulShape));
}

namespace ops {

Output Add(const Scope& scope, const Input& x, const Input& y) {
  return BinaryOp(scope, "Add", x, y);
}
Output Sub(const Scope& scope, const Input& x, const Input& y) {
  return BinaryOp(scope, "Sub", x, y);
}
Output Mul(const Scope& scope, const Input& x, const Input& y) {
  return BinaryOp(scope, "Mul", x, y);
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
