#include "graph/shape_inference.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace distflow {

absl::Status InferenceContext::WithRank(int i, int rank) const {
  const PartialTensorShape& s = input_shapes_[i];
  if (s.unknown_rank() || s.dims() == rank) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("input ", i, " must have rank ", rank, " but has shape ",
                   s.DebugString()));
}

absl::StatusOr<PartialTensorShape> InferenceContext::InputAsShape(int i) const {
  const Tensor* value = input_values_[i];
  if (value == nullptr) {
    const PartialTensorShape& s = input_shapes_[i];
    if (s.dims() == 1 && s.dim_size(0) >= 0) {
      return UnknownShapeOfRank(s.dim_size(0));
    }
    return PartialTensorShape::UnknownRank();
  }
  if (value->dims() != 1 || (value->dtype() != DataType::kInt32 &&
                             value->dtype() != DataType::kInt64)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input ", i, " must be an int32 or int64 vector of sizes, got ",
        value->TypeString()));
  }
  std::vector<int64_t> dims;
  if (value->dtype() == DataType::kInt32) {
    for (int32_t d : value->flat<int32_t>()) dims.push_back(d);
  } else {
    for (int64_t d : value->flat<int64_t>()) dims.push_back(d);
  }
  return PartialTensorShape::FromDims(dims);
}

absl::StatusOr<PartialTensorShape> UnknownShapeOfRank(int64_t rank) {
  if (rank < 0) return PartialTensorShape::UnknownRank();
  if (rank > kMaxInferredRank) {
    return absl::InvalidArgumentError(
        absl::StrCat("a shape of ", rank, " dimensions is more than the ",
                     kMaxInferredRank, " a tensor may have"));
  }
  return PartialTensorShape::UnknownDims(static_cast<int>(rank));
}

namespace shape_fns {

absl::Status Unknown(InferenceContext* c) {
  for (int i = 0; i < c->num_outputs(); ++i)
    c->set_output(i, PartialTensorShape());
  return absl::OkStatus();
}

absl::Status UnchangedShape(InferenceContext* c) {
  c->set_output(0, c->input(0));
  return absl::OkStatus();
}

absl::Status Scalar(InferenceContext* c) {
  c->set_output(0, PartialTensorShape({}));
  return absl::OkStatus();
}

absl::Status FromShapeAttr(InferenceContext* c) {
  PartialTensorShape shape;
  absl::Status s = c->GetAttr("shape", &shape);
  if (!s.ok()) return s;
  c->set_output(0, shape);
  return absl::OkStatus();
}

absl::Status NoOutputs(InferenceContext* c) { return absl::OkStatus(); }

absl::Status BroadcastBinary(InferenceContext* c) {
  auto shape = BroadcastShapes(c->input(0), c->input(1));
  if (!shape.ok()) return shape.status();
  c->set_output(0, *shape);
  return absl::OkStatus();
}

}  // namespace shape_fns

absl::StatusOr<PartialTensorShape> BroadcastShapes(
    const PartialTensorShape& a, const PartialTensorShape& b) {
  if (a.unknown_rank() || b.unknown_rank())
    return PartialTensorShape::UnknownRank();
  const int rank = std::max(a.dims(), b.dims());
  std::vector<int64_t> out(rank);
  for (int i = 0; i < rank; ++i) {
    // Align from the last dimension; missing leading dimensions act as 1.
    const int ia = a.dims() - rank + i, ib = b.dims() - rank + i;
    const int64_t da = ia >= 0 ? a.dim_size(ia) : 1;
    const int64_t db = ib >= 0 ? b.dim_size(ib) : 1;
    if (da == 1) {
      out[i] = db;
    } else if (db == 1) {
      out[i] = da;
    } else if (da == -1 || db == -1) {
      // An unknown size against a known one other than 1: the result must be
      // the known size.
      out[i] = da == -1 ? db : da;
    } else if (da == db) {
      out[i] = da;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("shapes ", a.DebugString(),
                                                     " and ", b.DebugString(),
                                                     " cannot be broadcast"));
    }
  }
  return PartialTensorShape::FromDims(out);
}

}  // namespace distflow
