// Reductions over axes (Sum, Mean, Max, Min, Prod) and ArgMax/ArgMin.
#include "graph/ops/reduction_ops.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/node_builder.h"
#include "graph/ops/op_families.h"
#include "graph/shape_inference.h"

namespace distflow {

absl::StatusOr<std::vector<bool>> ReductionAxes(const Tensor& axes, int rank) {
  if (axes.dims() > 1 ||
      (axes.dtype() != DataType::kInt32 && axes.dtype() != DataType::kInt64)) {
    return absl::InvalidArgumentError(
        absl::StrCat("axes must be an int32 or int64 scalar or vector, got ",
                     axes.TypeString()));
  }
  std::vector<bool> reduce(rank, false);
  for (int64_t i = 0; i < axes.NumElements(); ++i) {
    const int64_t axis = axes.dtype() == DataType::kInt32
                             ? axes.flat<int32_t>()[i]
                             : axes.flat<int64_t>()[i];
    if (axis < -rank || axis >= rank) {
      return absl::InvalidArgumentError(
          absl::StrCat("axis ", axis, " is out of range for an input of rank ",
                       rank, " (use axes in [", -rank, ", ", rank, "))"));
    }
    const int a = static_cast<int>(axis < 0 ? axis + rank : axis);
    if (reduce[a]) {
      return absl::InvalidArgumentError(
          absl::StrCat("axis ", axis, " appears more than once in axes ",
                       axes.DebugString(), "; list each axis once"));
    }
    reduce[a] = true;
  }
  return reduce;
}

absl::StatusOr<int> SingleAxis(const Tensor& axis, int rank) {
  if (axis.dims() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "axis must be an int32 or int64 scalar, got ", axis.TypeString()));
  }
  DF_ASSIGN_OR_RETURN(std::vector<bool> mask, ReductionAxes(axis, rank));
  for (int i = 0; i < rank; ++i) {
    if (mask[i]) return i;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("an input of rank ", rank, " has no axis to reduce"));
}

namespace {

absl::Status ReductionShape(InferenceContext* c) {
  bool keep_dims = false;
  DF_RETURN_IF_ERROR(c->GetAttr("keep_dims", &keep_dims));
  const PartialTensorShape& in = c->input(0);
  const Tensor* axes = c->input_value(1);
  if (!c->input(1).unknown_rank() && c->input(1).dims() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("axes must be a scalar or vector, got shape ",
                     c->input(1).DebugString()));
  }
  if (in.unknown_rank()) {
    c->set_output(0, PartialTensorShape::UnknownRank());
    return absl::OkStatus();
  }
  if (axes == nullptr) {
    if (keep_dims) {
      c->set_output(0, PartialTensorShape::UnknownDims(in.dims()));
    } else if (c->input(1).dims() == 0 && in.dims() > 0) {
      c->set_output(0, PartialTensorShape::UnknownDims(in.dims() - 1));
    } else {
      c->set_output(0, PartialTensorShape::UnknownRank());
    }
    return absl::OkStatus();
  }
  DF_ASSIGN_OR_RETURN(std::vector<bool> reduce,
                      ReductionAxes(*axes, in.dims()));
  std::vector<int64_t> dims;
  for (int i = 0; i < in.dims(); ++i) {
    if (!reduce[i]) {
      dims.push_back(in.dim_size(i));
    } else if (keep_dims) {
      dims.push_back(1);
    }
  }
  DF_ASSIGN_OR_RETURN(PartialTensorShape out,
                      PartialTensorShape::FromDims(dims));
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status ArgReductionShape(InferenceContext* c) {
  const PartialTensorShape& in = c->input(0);
  DF_RETURN_IF_ERROR(c->WithRank(1, 0));
  if (in.unknown_rank()) {
    c->set_output(0, PartialTensorShape::UnknownRank());
    return absl::OkStatus();
  }
  if (in.dims() == 0) {
    return absl::InvalidArgumentError(
        "input must have rank >= 1, got a scalar");
  }
  const Tensor* axis = c->input_value(1);
  if (axis == nullptr) {
    c->set_output(0, PartialTensorShape::UnknownDims(in.dims() - 1));
    return absl::OkStatus();
  }
  DF_ASSIGN_OR_RETURN(int a, SingleAxis(*axis, in.dims()));
  std::vector<int64_t> dims;
  for (int i = 0; i < in.dims(); ++i) {
    if (i != a) dims.push_back(in.dim_size(i));
  }
  DF_ASSIGN_OR_RETURN(PartialTensorShape out,
                      PartialTensorShape::FromDims(dims));
  c->set_output(0, out);
  return absl::OkStatus();
}

Output Reduce(const Scope& scope, const char* op, const Input& input,
              const Input& axes, const ops::ReduceOptions& options) {
  return NodeBuilder(scope, op, op)
      .Input(AsOutput(scope, input))
      .Input(AsOutput(scope, axes))
      .Attr("keep_dims", options.keep_dims)
      .Finalize()
      .output(0);
}

Output ArgReduce(const Scope& scope, const char* op, const Input& input,
                 const Input& axis) {
  return NodeBuilder(scope, op, op)
      .Input(AsOutput(scope, input))
      .Input(AsOutput(scope, axis))
      .Finalize()
      .output(0);
}

}  // namespace

void RegisterReductionOps(OpRegistry* r) {
  for (const char* name : {"Sum", "Mean", "Max", "Min", "Prod"}) {
    AddOp(r, OpDefBuilder(name)
                 .Input("input", "T")
                 .Input("axes", "Tidx")
                 .Output("output", "T")
                 .TypeAttr("T", kNumericTypes)
                 .TypeAttr("Tidx", {DataType::kInt32, DataType::kInt64})
                 .Attr("keep_dims", MakeAttr(false))
                 .Summary("Reduces input over axes.")
                 .SetShapeFn(ReductionShape));
  }
  for (const char* name : {"ArgMax", "ArgMin"}) {
    AddOp(r, OpDefBuilder(name)
                 .Input("input", "T")
                 .Input("dimension", "Tidx")
                 .Output("output", DataType::kInt64)
                 .TypeAttr("T", kNumericTypes)
                 .TypeAttr("Tidx", {DataType::kInt32, DataType::kInt64})
                 .Summary("The index of the extreme element along an axis.")
                 .SetShapeFn(ArgReductionShape));
  }
}

namespace ops {

Output Sum(const Scope& scope, const Input& input, const Input& axes,
           const ReduceOptions& options) {
  return Reduce(scope, "Sum", input, axes, options);
}
Output Mean(const Scope& scope, const Input& input, const Input& axes,
            const ReduceOptions& options) {
  return Reduce(scope, "Mean", input, axes, options);
}
Output Max(const Scope& scope, const Input& input, const Input& axes,
           const ReduceOptions& options) {
  return Reduce(scope, "Max", input, axes, options);
}
Output Min(const Scope& scope, const Input& input, const Input& axes,
           const ReduceOptions& options) {
  return Reduce(scope, "Min", input, axes, options);
}
Output Prod(const Scope& scope, const Input& input, const Input& axes,
            const ReduceOptions& options) {
  return Reduce(scope, "Prod", input, axes, options);
}
Output ArgMax(const Scope& scope, const Input& input, const Input& axis) {
  return ArgReduce(scope, "ArgMax", input, axis);
}
Output ArgMin(const Scope& scope, const Input& input, const Input& axis) {
  return ArgReduce(scope, "ArgMin", input, axis);
}

}  // namespace ops
}  // namespace distflow
