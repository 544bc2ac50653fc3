// Ops that rearrange a tensor's elements or dimensions: Transpose, ExpandDims,
// Squeeze, Slice, Pad, Tile; and Size and Rank.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/node_builder.h"
#include "graph/ops/array_grad_ops.h"
#include "graph/ops/array_util.h"
#include "graph/ops/op_families.h"
#include "graph/shape_inference.h"

namespace distflow {
namespace {

// The known rank of input `i`, or of the vector input `vec` (its length) when
// input i's rank is unknown; -1 if neither is known.
int64_t RankFrom(InferenceContext* c, int i, int vec) {
  if (!c->input(i).unknown_rank()) return c->input(i).dims();
  const PartialTensorShape& v = c->input(vec);
  if (v.dims() == 1 && v.dim_size(0) >= 0) return v.dim_size(0);
  return -1;
}

// Sets output 0 to `rank` unknown sizes (unknown rank if rank < 0).
absl::Status UnknownOfRank(InferenceContext* c, int64_t rank) {
  DF_ASSIGN_OR_RETURN(PartialTensorShape shape, UnknownShapeOfRank(rank));
  c->set_output(0, std::move(shape));
  return absl::OkStatus();
}

absl::Status TransposeShape(InferenceContext* c) {
  const PartialTensorShape& x = c->input(0);
  const int64_t rank = RankFrom(c, 0, 1);
  if (c->input_value(1) == nullptr) return UnknownOfRank(c, rank);
  std::vector<int64_t> perm = IndexValues(*c->input_value(1));
  if (rank >= 0 && static_cast<int>(perm.size()) != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("perm has ", perm.size(), " entries but x has shape ",
                     x.DebugString(), "; perm needs one entry per dimension"));
  }
  std::vector<bool> seen(perm.size(), false);
  std::vector<int64_t> out(perm.size(), -1);
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(perm.size()) ||
        seen[perm[i]]) {
      return absl::InvalidArgumentError(
          absl::StrCat("perm ", c->input_value(1)->DebugString(),
                       " is not a permutation of 0..", perm.size() - 1));
    }
    seen[perm[i]] = true;
    if (!x.unknown_rank()) out[i] = x.dim_size(static_cast<int>(perm[i]));
  }
  DF_ASSIGN_OR_RETURN(PartialTensorShape shape,
                      PartialTensorShape::FromDims(out));
  c->set_output(0, shape);
  return absl::OkStatus();
}

absl::Status ExpandDimsShape(InferenceContext* c) {
  const PartialTensorShape& x = c->input(0);
  if (x.unknown_rank()) return UnknownOfRank(c, -1);
  const int rank = x.dims();
  if (c->input_value(1) == nullptr) return UnknownOfRank(c, rank + 1);
  std::vector<int64_t> axis = IndexValues(*c->input_value(1));
  if (axis.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "axis must hold one value, got ", c->input_value(1)->DebugString()));
  }
  DF_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis[0], rank + 1, "axis"));
  std::vector<int64_t> dims = x.dim_sizes();
  dims.insert(dims.begin() + a, 1);
  DF_ASSIGN_OR_RETURN(PartialTensorShape shape,
                      PartialTensorShape::FromDims(dims));
  c->set_output(0, shape);
  return absl::OkStatus();
}

absl::Status SqueezeShape(InferenceContext* c) {
  const PartialTensorShape& x = c->input(0);
  std::vector<int64_t> squeeze;
  DF_RETURN_IF_ERROR(c->GetAttr("squeeze_dims", &squeeze));
  if (x.unknown_rank()) return UnknownOfRank(c, -1);
  std::vector<bool> drop(x.dims(), false);
  if (squeeze.empty()) {
    for (int i = 0; i < x.dims(); ++i) {
      // An unknown size may or may not be 1: the output rank is unknown.
      if (x.dim_size(i) == -1) return UnknownOfRank(c, -1);
      drop[i] = x.dim_size(i) == 1;
    }
  } else {
    for (int64_t d : squeeze) {
      DF_ASSIGN_OR_RETURN(int a, NormalizeAxis(d, x.dims(), "squeeze dim"));
      if (x.dim_size(a) != 1 && x.dim_size(a) != -1) {
        return absl::InvalidArgumentError(
            absl::StrCat("cannot squeeze dimension ", d, " of shape ",
                         x.DebugString(), ": its size is not 1"));
      }
      drop[a] = true;
    }
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < x.dims(); ++i) {
    if (!drop[i]) dims.push_back(x.dim_size(i));
  }
  DF_ASSIGN_OR_RETURN(PartialTensorShape shape,
                      PartialTensorShape::FromDims(dims));
  c->set_output(0, shape);
  return absl::OkStatus();
}

absl::Status SliceShape(InferenceContext* c) {
  const PartialTensorShape& x = c->input(0);
  const int64_t rank = RankFrom(c, 0, 1);
  if (c->input_value(1) == nullptr || c->input_value(2) == nullptr) {
    return UnknownOfRank(c, rank);
  }
  std::vector<int64_t> begin = IndexValues(*c->input_value(1));
  std::vector<int64_t> size = IndexValues(*c->input_value(2));
  if (begin.size() != size.size() ||
      (rank >= 0 && static_cast<int>(begin.size()) != rank)) {
    return absl::InvalidArgumentError(
        absl::StrCat("begin ", c->input_value(1)->DebugString(), " and size ",
                     c->input_value(2)->DebugString(),
                     " must have one entry per dimension "
                     "of x, whose shape is ",
                     x.DebugString()));
  }
  std::vector<int64_t> out(begin.size(), -1);
  for (size_t i = 0; i < begin.size(); ++i) {
    const int64_t dim = x.unknown_rank() ? -1 : x.dim_size(static_cast<int>(i));
    const bool bad = begin[i] < 0 || size[i] < -1 ||
                     (dim >= 0 && (begin[i] > dim ||
                                   (size[i] >= 0 && size[i] > dim - begin[i])));
    if (bad) {
      return absl::InvalidArgumentError(absl::StrCat(
          "slice of dimension ", i, " (begin ", begin[i], ", size ", size[i],
          ") is outside shape ", x.DebugString(),
          "; need 0 <= begin and begin + size <= the dimension (size -1: to "
          "the end)"));
    }
    out[i] = size[i] >= 0 ? size[i] : (dim >= 0 ? dim - begin[i] : -1);
  }
  DF_ASSIGN_OR_RETURN(PartialTensorShape shape,
                      PartialTensorShape::FromDims(out));
  c->set_output(0, shape);
  return absl::OkStatus();
}

absl::Status PadShape(InferenceContext* c) {
  const PartialTensorShape& x = c->input(0);
  const PartialTensorShape& p = c->input(1);
  if (!p.unknown_rank() &&
      (p.dims() != 2 || (p.dim_size(1) != 2 && p.dim_size(1) != -1))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "paddings must be a matrix [rank, 2], got shape ", p.DebugString()));
  }
  int64_t rank = x.dims();
  if (rank < 0 && p.dims() == 2 && p.dim_size(0) >= 0) rank = p.dim_size(0);
  if (c->input_value(1) == nullptr) return UnknownOfRank(c, rank);
  std::vector<int64_t> pads = IndexValues(*c->input_value(1));
  const int n = static_cast<int>(pads.size() / 2);
  if (rank >= 0 && n != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("paddings ", c->input_value(1)->DebugString(), " has ", n,
                     " rows but x has shape ", x.DebugString(),
                     "; give one row per dimension"));
  }
  std::vector<int64_t> out(n, -1);
  for (int i = 0; i < n; ++i) {
    if (pads[2 * i] < 0 || pads[2 * i + 1] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("paddings ", c->input_value(1)->DebugString(),
                       " has a negative entry in row ", i));
    }
    const int64_t dim = x.unknown_rank() ? -1 : x.dim_size(i);
    if (dim >= 0 &&
        (__builtin_add_overflow(dim, pads[2 * i], &out[i]) ||
         __builtin_add_overflow(out[i], pads[2 * i + 1], &out[i]))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "padding dimension ", i, " of shape ", x.DebugString(), " by ",
          pads[2 * i], " and ", pads[2 * i + 1], " overflows int64"));
    }
  }
  DF_ASSIGN_OR_RETURN(PartialTensorShape shape,
                      PartialTensorShape::FromDims(out));
  c->set_output(0, shape);
  return absl::OkStatus();
}

absl::Status TileShape(InferenceContext* c) {
  const PartialTensorShape& x = c->input(0);
  const int64_t rank = RankFrom(c, 0, 1);
  if (c->input_value(1) == nullptr) return UnknownOfRank(c, rank);
  std::vector<int64_t> m = IndexValues(*c->input_value(1));
  if (rank >= 0 && static_cast<int>(m.size()) != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("multiples ", c->input_value(1)->DebugString(), " has ",
                     m.size(), " entries but x has shape ", x.DebugString(),
                     "; give one per dimension"));
  }
  std::vector<int64_t> out(m.size(), -1);
  for (size_t i = 0; i < m.size(); ++i) {
    if (m[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("multiples ", c->input_value(1)->DebugString(),
                       " has a negative entry"));
    }
    const int64_t dim = x.unknown_rank() ? -1 : x.dim_size(static_cast<int>(i));
    if (dim >= 0 && __builtin_mul_overflow(dim, m[i], &out[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("tiling dimension ", i, " of shape ", x.DebugString(),
                       " ", m[i], " times overflows int64"));
    }
  }
  DF_ASSIGN_OR_RETURN(PartialTensorShape shape,
                      PartialTensorShape::FromDims(out));
  c->set_output(0, shape);
  return absl::OkStatus();
}

const std::vector<DataType> kIndexTypes = {DataType::kInt32, DataType::kInt64};

Output Binary(const Scope& scope, const char* op, const Input& x,
              const Input& y) {
  return NodeBuilder(scope, op, op)
      .Input(AsOutput(scope, x))
      .Input(AsOutput(scope, y))
      .Finalize()
      .output(0);
}

}  // namespace

void RegisterTransformOps(OpRegistry* r) {
  AddOp(r, OpDefBuilder("Transpose")
               .Input("x", "T")
               .Input("perm", "Tperm")
               .Output("y", "T")
               .TypeAttr("T")
               .TypeAttr("Tperm", kIndexTypes)
               .Summary("y[i...] = x[i permuted]: dimension i of y is "
                        "dimension perm[i] of x.")
               .SetShapeFn(TransposeShape));
  AddOp(r, OpDefBuilder("ExpandDims")
               .Input("input", "T")
               .Input("dim", "Tdim")
               .Output("output", "T")
               .TypeAttr("T")
               .TypeAttr("Tdim", kIndexTypes)
               .Summary("Inserts a dimension of size 1 at index dim.")
               .SetShapeFn(ExpandDimsShape));
  AddOp(r, OpDefBuilder("Squeeze")
               .Input("input", "T")
               .Output("output", "T")
               .TypeAttr("T")
               .Attr("squeeze_dims", MakeAttr(std::vector<int64_t>{}))
               .Summary("Removes dimensions of size 1 (those listed, or all).")
               .SetShapeFn(SqueezeShape));
  AddOp(r, OpDefBuilder("Slice")
               .Input("input", "T")
               .Input("begin", "Index")
               .Input("size", "Index")
               .Output("output", "T")
               .TypeAttr("T")
               .TypeAttr("Index", kIndexTypes)
               .SetShapeFn(SliceShape));
  AddOp(r, OpDefBuilder("Pad")
               .Input("input", "T")
               .Input("paddings", "Tpaddings")
               .Output("output", "T")
               .TypeAttr("T")
               .TypeAttr("Tpaddings", kIndexTypes)
               .Summary("Pads with zeros: paddings[i] = [before, after] of "
                        "dimension i.")
               .SetShapeFn(PadShape));
  AddOp(r, OpDefBuilder("Tile")
               .Input("input", "T")
               .Input("multiples", "Tmultiples")
               .Output("output", "T")
               .TypeAttr("T")
               .TypeAttr("Tmultiples", kIndexTypes)
               .SetShapeFn(TileShape));
  AddOp(r, OpDefBuilder("InvertPermutation")
               .Input("x", "T")
               .Output("y", "T")
               .TypeAttr("T", kIndexTypes)
               .Summary("y[x[i]] = i for a permutation x.")
               .SetShapeFn([](InferenceContext* c) -> absl::Status {
                 DF_RETURN_IF_ERROR(c->WithRank(0, 1));
                 return shape_fns::UnchangedShape(c);
               }));
  AddOp(r, OpDefBuilder("TileGrad")
               .Input("dy", "T")
               .Input("x_shape", "Tshape")
               .Output("dx", "T")
               .TypeAttr("T", kNumericTypes)
               .TypeAttr("Tshape", kIndexTypes)
               .Summary("The gradient of Tile: dy summed over the tiles.")
               .SetShapeFn([](InferenceContext* c) -> absl::Status {
                 DF_ASSIGN_OR_RETURN(PartialTensorShape shape,
                                     c->InputAsShape(1));
                 c->set_output(0, shape);
                 return absl::OkStatus();
               }));
  AddOp(r, OpDefBuilder("Size")
               .Input("input", "T")
               .Output("output", "out_type")
               .TypeAttr("T")
               .Attr("out_type", MakeAttr(DataType::kInt32))
               .SetShapeFn(shape_fns::Scalar));
  AddOp(r, OpDefBuilder("Rank")
               .Input("input", "T")
               .Output("output", DataType::kInt32)
               .TypeAttr("T")
               .SetShapeFn(shape_fns::Scalar));
}

namespace ops {

Output Transpose(const Scope& scope, const Input& x, const Input& perm) {
  return Binary(scope, "Transpose", x, perm);
}

Output ExpandDims(const Scope& scope, const Input& x, const Input& axis) {
  return Binary(scope, "ExpandDims", x, axis);
}

Output Squeeze(const Scope& scope, const Input& x,
               const std::vector<int64_t>& axis) {
  return NodeBuilder(scope, "Squeeze", "Squeeze")
      .Input(AsOutput(scope, x))
      .Attr("squeeze_dims", axis)
      .Finalize()
      .output(0);
}

Output Slice(const Scope& scope, const Input& x, const Input& begin,
             const Input& size) {
  std::vector<Output> idx = AsOutputsOfOneType(scope, {begin, size});
  return NodeBuilder(scope, "Slice", "Slice")
      .Input(AsOutput(scope, x))
      .Input(idx[0])
      .Input(idx[1])
      .Finalize()
      .output(0);
}

Output Pad(const Scope& scope, const Input& x, const Input& paddings) {
  return Binary(scope, "Pad", x, paddings);
}

Output Tile(const Scope& scope, const Input& x, const Input& multiples) {
  return Binary(scope, "Tile", x, multiples);
}

Output Size(const Scope& scope, const Input& x, DataType out_type) {
  return NodeBuilder(scope, "Size", "Size")
      .Input(AsOutput(scope, x))
      .Attr("out_type", out_type)
      .Finalize()
      .output(0);
}

Output Rank(const Scope& scope, const Input& x) {
  return NodeBuilder(scope, "Rank", "Rank")
      .Input(AsOutput(scope, x))
      .Finalize()
      .output(0);
}

namespace internal {

Output InvertPermutation(const Scope& scope, const Input& perm) {
  return NodeBuilder(scope, "InvertPermutation", "InvertPermutation")
      .Input(AsOutput(scope, perm))
      .Finalize()
      .output(0);
}

Output TileGrad(const Scope& scope, const Input& dy, const Input& x_shape) {
  return Binary(scope, "TileGrad", dy, x_shape);
}

}  // namespace internal
}  // namespace ops
}  // namespace distflow
