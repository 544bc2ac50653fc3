// Joining and cutting tensors: Concat, Split, Pack (Stack) and Unpack
// (Unstack).
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

// The merge of the shapes of inputs [first, first + n); dimension `skip` (if
// >= 0) is left out of the comparison and summed into *skip_sum (-1 if any is
// unknown).
absl::StatusOr<PartialTensorShape> MergeInputs(InferenceContext* c, int first,
                                               int n, int skip,
                                               int64_t* skip_sum) {
  PartialTensorShape merged;
  int64_t sum = 0;
  for (int i = first; i < first + n; ++i) {
    PartialTensorShape s = c->input(i);
    if (!s.unknown_rank() && skip >= 0) {
      if (skip >= s.dims()) {
        return absl::InvalidArgumentError(
            absl::StrCat("input ", i - first, " has shape ", s.DebugString(),
                         ", which has no dimension ", skip));
      }
      std::vector<int64_t> dims = s.dim_sizes();
      if (sum < 0 || dims[skip] < 0) {
        sum = -1;
      } else if (__builtin_add_overflow(sum, dims[skip], &sum)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input ", i - first, " of shape ", s.DebugString(),
            " makes dimension ", skip, " of the result larger than int64"));
      }
      dims[skip] = -1;
      DF_ASSIGN_OR_RETURN(s, PartialTensorShape::FromDims(dims));
    } else if (skip >= 0) {
      sum = -1;
    }
    auto m = merged.MergeWith(s);
    if (!m.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", i - first, " has shape ", c->input(i).DebugString(),
          ", which does not match the other inputs (", merged.DebugString(),
          skip >= 0 ? absl::StrCat(" apart from dimension ", skip) : "", ")"));
    }
    merged = *m;
  }
  if (skip_sum != nullptr) *skip_sum = sum;
  return merged;
}

absl::Status ConcatShape(InferenceContext* c) {
  const int n = c->num_inputs() - 1;
  // The values agree in rank; their sizes along the axis may differ.
  int rank = -1;
  for (int i = 0; i < n; ++i) {
    const int r = c->input(i).dims();
    if (r >= 0 && rank >= 0 && r != rank) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", i, " has shape ", c->input(i).DebugString(),
          ", whose rank differs from that of the other inputs (", rank, ")"));
    }
    if (r >= 0) rank = r;
  }
  if (rank < 0) return shape_fns::Unknown(c);
  if (rank == 0) {
    return absl::InvalidArgumentError("cannot concatenate scalars; use Stack");
  }
  const PartialTensorShape all = PartialTensorShape::UnknownDims(rank);
  const Tensor* axis_value = c->input_value(n);
  if (axis_value == nullptr) {
    c->set_output(0, PartialTensorShape::UnknownDims(all.dims()));
    return absl::OkStatus();
  }
  std::vector<int64_t> axis = IndexValues(*axis_value);
  if (axis.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("axis must be a scalar, got ", axis_value->DebugString()));
  }
  DF_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis[0], all.dims(), "axis"));
  int64_t sum = 0;
  DF_ASSIGN_OR_RETURN(PartialTensorShape merged, MergeInputs(c, 0, n, a, &sum));
  std::vector<int64_t> dims = merged.dim_sizes();
  dims[a] = sum;
  DF_ASSIGN_OR_RETURN(PartialTensorShape out,
                      PartialTensorShape::FromDims(dims));
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status SplitShape(InferenceContext* c) {
  int64_t num_split = 0;
  DF_RETURN_IF_ERROR(c->GetAttr("num_split", &num_split));
  const PartialTensorShape& x = c->input(1);
  PartialTensorShape each = PartialTensorShape::UnknownRank();
  if (!x.unknown_rank()) {
    each = PartialTensorShape::UnknownDims(x.dims());
    if (c->input_value(0) != nullptr) {
      std::vector<int64_t> axis = IndexValues(*c->input_value(0));
      if (axis.size() != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "axis must be a scalar, got ", c->input_value(0)->DebugString()));
      }
      DF_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis[0], x.dims(), "axis"));
      std::vector<int64_t> dims = x.dim_sizes();
      if (dims[a] >= 0) {
        if (dims[a] % num_split != 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              "cannot split dimension ", a, " of shape ", x.DebugString(),
              " into ", num_split, " equal parts"));
        }
        dims[a] /= num_split;
      }
      DF_ASSIGN_OR_RETURN(each, PartialTensorShape::FromDims(dims));
    }
  }
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, each);
  return absl::OkStatus();
}

absl::Status PackShape(InferenceContext* c) {
  int64_t axis = 0;
  DF_RETURN_IF_ERROR(c->GetAttr("axis", &axis));
  DF_ASSIGN_OR_RETURN(PartialTensorShape all,
                      MergeInputs(c, 0, c->num_inputs(), -1, nullptr));
  if (all.unknown_rank()) return shape_fns::Unknown(c);
  DF_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, all.dims() + 1, "axis"));
  std::vector<int64_t> dims = all.dim_sizes();
  dims.insert(dims.begin() + a, c->num_inputs());
  DF_ASSIGN_OR_RETURN(PartialTensorShape out,
                      PartialTensorShape::FromDims(dims));
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status UnpackShape(InferenceContext* c) {
  int64_t axis = 0, num = 0;
  DF_RETURN_IF_ERROR(c->GetAttr("axis", &axis));
  DF_RETURN_IF_ERROR(c->GetAttr("num", &num));
  const PartialTensorShape& x = c->input(0);
  PartialTensorShape each = PartialTensorShape::UnknownRank();
  if (!x.unknown_rank()) {
    DF_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, x.dims(), "axis"));
    if (x.dim_size(a) >= 0 && x.dim_size(a) != num) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot unstack shape ", x.DebugString(), " along axis ",
                       axis, " into ", num, " tensors"));
    }
    std::vector<int64_t> dims = x.dim_sizes();
    dims.erase(dims.begin() + a);
    DF_ASSIGN_OR_RETURN(each, PartialTensorShape::FromDims(dims));
  }
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, each);
  return absl::OkStatus();
}

std::vector<Output> Outputs(const Operation& op) {
  std::vector<Output> out;
  if (!op.valid()) return out;
  for (int i = 0; i < op.num_outputs(); ++i) out.push_back(op.output(i));
  return out;
}

}  // namespace

void RegisterConcatOps(OpRegistry* r) {
  AddOp(r, OpDefBuilder("Concat")
               .InputList("values", "T", "N")
               .Input("axis", "Tidx")
               .Output("output", "T")
               .IntAttr("N", 1)
               .TypeAttr("T")
               .TypeAttr("Tidx", {DataType::kInt32, DataType::kInt64})
               .Summary("Joins the values along axis (negative: from the end).")
               .SetShapeFn(ConcatShape));
  AddOp(r, OpDefBuilder("ConcatOffset")
               .Input("concat_dim", "Tidx")
               .InputList("shape", "T", "N")
               .OutputList("offset", "T", "N")
               .IntAttr("N", 1)
               .TypeAttr("T", {DataType::kInt32})
               .TypeAttr("Tidx", {DataType::kInt32, DataType::kInt64})
               .Summary("Where each input of a Concat starts in its output.")
               .SetShapeFn([](InferenceContext* c) -> absl::Status {
                 for (int i = 0; i < c->num_outputs(); ++i) {
                   c->set_output(i, c->input(i + 1));
                 }
                 return absl::OkStatus();
               }));
  AddOp(r, OpDefBuilder("Split")
               .Input("axis", DataType::kInt32)
               .Input("value", "T")
               .OutputList("output", "T", "num_split")
               .IntAttr("num_split", 1)
               .TypeAttr("T")
               .Summary("Cuts value into num_split equal parts along axis.")
               .SetShapeFn(SplitShape));
  AddOp(r, OpDefBuilder("Pack")
               .InputList("values", "T", "N")
               .Output("output", "T")
               .IntAttr("N", 1)
               .TypeAttr("T")
               .Attr("axis", MakeAttr(int64_t{0}))
               .Summary("Stacks N tensors of one shape along a new axis.")
               .SetShapeFn(PackShape));
  AddOp(r, OpDefBuilder("Unpack")
               .Input("value", "T")
               .OutputList("output", "T", "num")
               .IntAttr("num", 0)
               .TypeAttr("T")
               .Attr("axis", MakeAttr(int64_t{0}))
               .Summary("Cuts value along axis into num tensors of one "
                        "dimension less.")
               .SetShapeFn(UnpackShape));
}

namespace ops {

Output Concat(const Scope& scope, const std::vector<Input>& values,
              const Input& axis) {
  std::vector<Output> in = AsOutputsOfOneType(scope, values);
  return NodeBuilder(scope, "Concat", "Concat")
      .Input(in)
      .Input(AsOutput(scope, axis))
      .Attr("N", static_cast<int64_t>(in.size()))
      .Finalize()
      .output(0);
}

std::vector<Output> Split(const Scope& scope, const Input& axis,
                          const Input& value, int64_t num_split) {
  return Outputs(NodeBuilder(scope, "Split", "Split")
                     .Input(AsOutput(scope, axis))
                     .Input(AsOutput(scope, value))
                     .Attr("num_split", num_split)
                     .Finalize());
}

Output Stack(const Scope& scope, const std::vector<Input>& values,
             int64_t axis) {
  std::vector<Output> in = AsOutputsOfOneType(scope, values);
  return NodeBuilder(scope, "Pack", "Stack")
      .Input(in)
      .Attr("N", static_cast<int64_t>(in.size()))
      .Attr("axis", axis)
      .Finalize()
      .output(0);
}

std::vector<Output> Unstack(const Scope& scope, const Input& value, int64_t num,
                            int64_t axis) {
  Output v = AsOutput(scope, value);
  if (num < 0 && v.valid()) {
    const PartialTensorShape shape = v.shape();
    auto a = NormalizeAxis(axis, shape.dims(), "axis of Unstack");
    if (shape.unknown_rank() || !a.ok() || shape.dim_size(*a) < 0) {
      scope.UpdateStatus(absl::InvalidArgumentError(
          absl::StrCat("Unstack of ", v.name(), " (shape ", shape.DebugString(),
                       ") along axis ", axis,
                       ": the size along the axis is unknown; pass num")));
      return {};
    }
    num = shape.dim_size(*a);
  }
  return Outputs(NodeBuilder(scope, "Unpack", "Unstack")
                     .Input(v)
                     .Attr("num", num)
                     .Attr("axis", axis)
                     .Finalize());
}

namespace internal {

std::vector<Output> ConcatOffset(const Scope& scope, const Input& axis,
                                 const std::vector<Output>& shapes) {
  return Outputs(NodeBuilder(scope, "ConcatOffset", "ConcatOffset")
                     .Input(AsOutput(scope, axis))
                     .Input(shapes)
                     .Attr("N", static_cast<int64_t>(shapes.size()))
                     .Finalize());
}

}  // namespace internal
}  // namespace ops
}  // namespace distflow
