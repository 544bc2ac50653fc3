#include "distflow/tensor_shape.h"

#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"

namespace distflow {
namespace {

// a * b, or -1 if it would overflow int64. Both are >= 0.
int64_t MultiplyWithoutOverflow(int64_t a, int64_t b) {
  if (a != 0 && b > std::numeric_limits<int64_t>::max() / a) return -1;
  return a * b;
}

std::string DimsString(const std::vector<int64_t>& dims) {
  return absl::StrCat("[",
                      absl::StrJoin(dims, ",",
                                    [](std::string* out, int64_t d) {
                                      absl::StrAppend(
                                          out, d < 0 ? "?" : absl::StrCat(d));
                                    }),
                      "]");
}

}  // namespace

TensorShape::TensorShape(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims) AddDim(d);
}

absl::StatusOr<TensorShape> TensorShape::FromDims(
    absl::Span<const int64_t> dims) {
  TensorShape shape;
  for (int64_t d : dims) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape ", DimsString(std::vector<int64_t>(dims.begin(), dims.end())),
          " has a negative dimension; every size must be >= 0"));
    }
    const int64_t n = MultiplyWithoutOverflow(shape.num_elements_, d);
    if (n < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape ", DimsString(std::vector<int64_t>(dims.begin(), dims.end())),
          " has more elements than fit in int64"));
    }
    shape.dims_.push_back(d);
    shape.num_elements_ = n;
  }
  return shape;
}

void TensorShape::AddDim(int64_t size) {
  DF_CHECK(size >= 0) << "negative dimension " << size;
  const int64_t n = MultiplyWithoutOverflow(num_elements_, size);
  DF_CHECK(n >= 0) << "element count overflows int64";
  dims_.push_back(size);
  num_elements_ = n;
}

std::string TensorShape::DebugString() const { return DimsString(dims_); }

PartialTensorShape::PartialTensorShape(std::initializer_list<int64_t> dims)
    : unknown_rank_(false), dims_(dims) {
  for (int64_t d : dims_)
    DF_CHECK(d >= -1) << "dimension " << d << " (use -1 for unknown)";
}

PartialTensorShape::PartialTensorShape(const TensorShape& shape)
    : unknown_rank_(false), dims_(shape.dim_sizes()) {}

absl::StatusOr<PartialTensorShape> PartialTensorShape::FromDims(
    absl::Span<const int64_t> dims) {
  PartialTensorShape shape;
  shape.unknown_rank_ = false;
  for (int64_t d : dims) {
    if (d < -1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape has dimension ", d, "; sizes are >= 0, or -1 for unknown"));
    }
    shape.dims_.push_back(d);
  }
  return shape;
}

PartialTensorShape PartialTensorShape::UnknownDims(int rank) {
  PartialTensorShape shape;
  shape.unknown_rank_ = false;
  shape.dims_.assign(rank, -1);
  return shape;
}

bool PartialTensorShape::IsFullyDefined() const {
  if (unknown_rank_) return false;
  for (int64_t d : dims_) {
    if (d < 0) return false;
  }
  return true;
}

int64_t PartialTensorShape::num_elements() const {
  if (!IsFullyDefined()) return -1;
  int64_t n = 1;
  for (int64_t d : dims_) {
    n = MultiplyWithoutOverflow(n, d);
    if (n < 0) return -1;
  }
  return n;
}

absl::StatusOr<TensorShape> PartialTensorShape::AsTensorShape() const {
  if (!IsFullyDefined()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", DebugString(), " is not fully defined"));
  }
  return TensorShape::FromDims(dims_);
}

bool PartialTensorShape::IsCompatibleWith(
    const PartialTensorShape& other) const {
  return MergeWith(other).ok();
}

absl::StatusOr<PartialTensorShape> PartialTensorShape::MergeWith(
    const PartialTensorShape& other) const {
  if (unknown_rank_) return other;
  if (other.unknown_rank_) return *this;
  auto incompatible = [&] {
    return absl::InvalidArgumentError(absl::StrCat("shapes ", DebugString(),
                                                   " and ", other.DebugString(),
                                                   " are incompatible"));
  };
  if (dims_.size() != other.dims_.size()) return incompatible();
  PartialTensorShape merged = *this;
  for (size_t i = 0; i < dims_.size(); ++i) {
    const int64_t a = dims_[i], b = other.dims_[i];
    if (a >= 0 && b >= 0 && a != b) return incompatible();
    merged.dims_[i] = a >= 0 ? a : b;
  }
  return merged;
}

std::string PartialTensorShape::DebugString() const {
  return unknown_rank_ ? "<unknown>" : DimsString(dims_);
}

}  // namespace distflow
