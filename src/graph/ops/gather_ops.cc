// Indexing ops: Gather, UnsortedSegmentSum, OneHot; and Range.
#include <cmath>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/node_builder.h"
#include "graph/ops/array_util.h"
#include "graph/ops/op_families.h"
#include "graph/shape_inference.h"

namespace distflow {
namespace {

absl::Status GatherShape(InferenceContext* c) {
  int64_t axis = 0;
  DF_RETURN_IF_ERROR(c->GetAttr("axis", &axis));
  const PartialTensorShape& params = c->input(0);
  const PartialTensorShape& indices = c->input(1);
  if (params.unknown_rank() || indices.unknown_rank()) {
    return shape_fns::Unknown(c);
  }
  if (params.dims() == 0) {
    return absl::InvalidArgumentError(
        "params must have rank >= 1, got a scalar");
  }
  DF_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, params.dims(), "axis"));
  std::vector<int64_t> dims(params.dim_sizes().begin(),
                            params.dim_sizes().begin() + a);
  dims.insert(dims.end(), indices.dim_sizes().begin(),
              indices.dim_sizes().end());
  dims.insert(dims.end(), params.dim_sizes().begin() + a + 1,
              params.dim_sizes().end());
  DF_ASSIGN_OR_RETURN(PartialTensorShape out,
                      PartialTensorShape::FromDims(dims));
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status SegmentSumShape(InferenceContext* c) {
  const PartialTensorShape& data = c->input(0);
  const PartialTensorShape& ids = c->input(1);
  if (c->input(2).dims() > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_segments must be a scalar, got shape ",
                     c->input(2).DebugString()));
  }
  int64_t num = -1;
  if (c->input_value(2) != nullptr) num = IndexValues(*c->input_value(2))[0];
  if (num < -1 || (c->input_value(2) != nullptr && num < 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_segments is ", num, " but must be >= 0"));
  }
  if (data.unknown_rank() || ids.unknown_rank()) return shape_fns::Unknown(c);
  if (ids.dims() > data.dims()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "segment_ids of shape ", ids.DebugString(),
        " must be a prefix of the shape of data, ", data.DebugString()));
  }
  for (int i = 0; i < ids.dims(); ++i) {
    if (ids.dim_size(i) >= 0 && data.dim_size(i) >= 0 &&
        ids.dim_size(i) != data.dim_size(i)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "segment_ids of shape ", ids.DebugString(),
          " must be a prefix of the shape of data, ", data.DebugString()));
    }
  }
  std::vector<int64_t> dims = {num};
  dims.insert(dims.end(), data.dim_sizes().begin() + ids.dims(),
              data.dim_sizes().end());
  DF_ASSIGN_OR_RETURN(PartialTensorShape out,
                      PartialTensorShape::FromDims(dims));
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status OneHotShape(InferenceContext* c) {
  int64_t axis = -1;
  DF_RETURN_IF_ERROR(c->GetAttr("axis", &axis));
  for (int i = 1; i < 4; ++i) {
    if (c->input(i).dims() > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          i == 1   ? "depth"
          : i == 2 ? "on_value"
                   : "off_value",
          " must be a scalar, got shape ", c->input(i).DebugString()));
    }
  }
  int64_t depth = -1;
  if (c->input_value(1) != nullptr) {
    depth = IndexValues(*c->input_value(1))[0];
    if (depth < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("depth is ", depth, " but must be >= 0"));
    }
  }
  const PartialTensorShape& indices = c->input(0);
  if (indices.unknown_rank()) return shape_fns::Unknown(c);
  const int rank = indices.dims() + 1;
  if (axis < -1 || axis >= rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "axis is ", axis, " but must be in [-1, ", rank,
        ") (-1: last) for indices of shape ", indices.DebugString()));
  }
  std::vector<int64_t> dims = indices.dim_sizes();
  dims.insert(axis == -1 ? dims.end() : dims.begin() + axis, depth);
  DF_ASSIGN_OR_RETURN(PartialTensorShape out,
                      PartialTensorShape::FromDims(dims));
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status RangeShape(InferenceContext* c) {
  for (int i = 0; i < 3; ++i) {
    if (c->input(i).dims() > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("start, limit and delta must be scalars, got shape ",
                       c->input(i).DebugString(), " for input ", i));
    }
  }
  const Tensor* v[3] = {c->input_value(0), c->input_value(1),
                        c->input_value(2)};
  if (v[0] == nullptr || v[1] == nullptr || v[2] == nullptr) {
    c->set_output(0, PartialTensorShape({-1}));
    return absl::OkStatus();
  }
  double d[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i) {
    DF_RETURN_IF_ERROR(VisitNumericType(v[i]->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      d[i] = static_cast<double>(v[i]->scalar<T>());
      return absl::OkStatus();
    }));
  }
  DF_ASSIGN_OR_RETURN(int64_t n, RangeLength(d[0], d[1], d[2]));
  c->set_output(0, PartialTensorShape({n}));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> RangeLength(double start, double limit, double delta) {
  if (!(delta != 0) || (delta > 0 && start > limit) ||
      (delta < 0 && start < limit)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Range(start ", start, ", limit ", limit, ", delta ", delta,
        ") is empty or endless: delta must be non-zero and step from start "
        "toward limit"));
  }
  return static_cast<int64_t>(std::ceil(std::abs((limit - start) / delta)));
}

void RegisterGatherOps(OpRegistry* r) {
  AddOp(r, OpDefBuilder("Gather")
               .Input("params", "Tparams")
               .Input("indices", "Tindices")
               .Output("output", "Tparams")
               .TypeAttr("Tparams")
               .TypeAttr("Tindices", {DataType::kInt32, DataType::kInt64})
               .Attr("axis", MakeAttr(int64_t{0}))
               .Summary("Rows (slices along axis) of params picked by indices; "
                        "shape params[:axis] + indices + params[axis+1:].")
               .SetShapeFn(GatherShape));
  AddOp(r, OpDefBuilder("UnsortedSegmentSum")
               .Input("data", "T")
               .Input("segment_ids", "Tindices")
               .Input("num_segments", "Tnumsegments")
               .Output("output", "T")
               .TypeAttr("T", kNumericTypes)
               .TypeAttr("Tindices", {DataType::kInt32, DataType::kInt64})
               .TypeAttr("Tnumsegments", {DataType::kInt32, DataType::kInt64})
               .Summary("output[s] = sum of data[i] over segment_ids[i] == s; "
                        "negative ids are dropped.")
               .SetShapeFn(SegmentSumShape));
  AddOp(r, OpDefBuilder("OneHot")
               .Input("indices", "TI")
               .Input("depth", DataType::kInt32)
               .Input("on_value", "T")
               .Input("off_value", "T")
               .Output("output", "T")
               .TypeAttr("T")
               .TypeAttr("TI",
                         {DataType::kInt32, DataType::kInt64, DataType::kUInt8})
               .Attr("axis", MakeAttr(int64_t{-1}))
               .SetShapeFn(OneHotShape));
  AddOp(r,
        OpDefBuilder("Range")
            .Input("start", "Tidx")
            .Input("limit", "Tidx")
            .Input("delta", "Tidx")
            .Output("output", "Tidx")
            .TypeAttr("Tidx", {DataType::kFloat, DataType::kDouble,
                               DataType::kInt32, DataType::kInt64})
            .Summary("[start, start + delta, ...] up to but excluding limit.")
            .SetShapeFn(RangeShape));
}

namespace ops {

Output Gather(const Scope& scope, const Input& params, const Input& indices,
              int64_t axis) {
  return NodeBuilder(scope, "Gather", "Gather")
      .Input(AsOutput(scope, params))
      .Input(AsOutput(scope, indices))
      .Attr("axis", axis)
      .Finalize()
      .output(0);
}

Output UnsortedSegmentSum(const Scope& scope, const Input& data,
                          const Input& segment_ids, const Input& num_segments) {
  return NodeBuilder(scope, "UnsortedSegmentSum", "UnsortedSegmentSum")
      .Input(AsOutput(scope, data))
      .Input(AsOutput(scope, segment_ids))
      .Input(AsOutput(scope, num_segments))
      .Finalize()
      .output(0);
}

Output OneHot(const Scope& scope, const Input& indices, const Input& depth,
              const Input& on_value, const Input& off_value, int64_t axis) {
  std::vector<Output> values = AsOutputsOfOneType(scope, {on_value, off_value});
  return NodeBuilder(scope, "OneHot", "OneHot")
      .Input(AsOutput(scope, indices))
      .Input(AsOutput(scope, depth))
      .Input(values[0])
      .Input(values[1])
      .Attr("axis", axis)
      .Finalize()
      .output(0);
}

Output Range(const Scope& scope, const Input& start, const Input& limit,
             const Input& delta) {
  std::vector<Output> in = AsOutputsOfOneType(scope, {start, limit, delta});
  return NodeBuilder(scope, "Range", "Range")
      .Input(in[0])
      .Input(in[1])
      .Input(in[2])
      .Finalize()
      .output(0);
}

}  // namespace ops
}  // namespace distflow
