#include "distflow/train/clip.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/node_builder.h"

namespace distflow {
namespace train {
namespace {

// The tensor whose elements count in the norm: a dense gradient, or the
// values of a sparse one.
Output Values(const Gradient& g) {
  return g.is_sparse() ? g.sparse().values : g.dense();
}

}  // namespace

absl::StatusOr<ClippedGradients> ClipByGlobalNorm(
    const Scope& scope, const std::vector<Gradient>& gradients,
    const Input& clip_norm) {
  DF_RETURN_IF_ERROR(scope.status());
  Scope s = scope.NewSubScope("clip_by_global_norm");
  DataType dtype = DataType::kInvalid;
  std::string first;
  std::vector<Output> squares;
  for (const Gradient& g : gradients) {
    if (!g.has_value()) continue;
    const Output t = Values(g);
    if (!DataTypeIsFloating(t.dtype())) {
      return absl::InvalidArgumentError(
          absl::StrCat("ClipByGlobalNorm: gradient ", t.name(), " is ",
                       DataTypeName(t.dtype()),
                       "; expected float32 or "
                       "float64"));
    }
    if (dtype == DataType::kInvalid) {
      dtype = t.dtype();
      first = t.name();
    } else if (t.dtype() != dtype) {
      return absl::InvalidArgumentError(
          absl::StrCat("ClipByGlobalNorm: gradients differ in type: ", first,
                       " is ", DataTypeName(dtype), " but ", t.name(), " is ",
                       DataTypeName(t.dtype())));
    }
    // The sum of squares beside the gradient, so that only a scalar travels.
    Scope at = s.ColocateWith(t.op());
    squares.push_back(ops::Sum(
        at, ops::Square(at, ops::Reshape(at, t, Tensor::Vector<int64_t>({-1}))),
        0));
  }
  if (squares.empty()) {
    return absl::InvalidArgumentError(
        "ClipByGlobalNorm: none of the gradients has a value");
  }
  Output total = squares[0];
  for (size_t i = 1; i < squares.size(); ++i) {
    total = ops::Add(s, total, squares[i]);
  }
  ClippedGradients out;
  out.global_norm = ops::Sqrt(s.WithOpName("global_norm"), total);
  const Output clip = AsOutputsOfOneType(s, {out.global_norm, clip_norm})[1];
  // clip / max(norm, clip): exactly 1 while within the bound, also when the
  // norm is 0.
  const Output scale =
      ops::Div(s, clip, ops::Maximum(s, out.global_norm, clip));
  for (const Gradient& g : gradients) {
    if (!g.has_value()) {
      out.gradients.push_back(g);
      continue;
    }
    Scope at = s.ColocateWith(Values(g).op());
    if (g.is_sparse()) {
      IndexedSlices clipped = g.sparse();
      clipped.values = ops::Mul(at, clipped.values, scale);
      out.gradients.push_back(clipped);
    } else {
      out.gradients.push_back(ops::Mul(at, g.dense(), scale));
    }
  }
  DF_RETURN_IF_ERROR(scope.status());
  return out;
}

absl::StatusOr<std::vector<GradAndVar>> ClipByGlobalNorm(
    const Scope& scope, const std::vector<GradAndVar>& grads_and_vars,
    const Input& clip_norm, Output* global_norm) {
  std::vector<Gradient> grads;
  for (const auto& gv : grads_and_vars) grads.push_back(gv.first);
  DF_ASSIGN_OR_RETURN(ClippedGradients clipped,
                      ClipByGlobalNorm(scope, grads, clip_norm));
  std::vector<GradAndVar> out;
  for (size_t i = 0; i < grads_and_vars.size(); ++i) {
    out.push_back({clipped.gradients[i], grads_and_vars[i].second});
  }
  if (global_norm != nullptr) *global_norm = clipped.global_norm;
  return out;
}

}  // namespace train
}  // namespace distflow
