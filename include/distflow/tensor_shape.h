// Shapes of tensors (fully known) and of graph values (possibly partly
// unknown).
#ifndef DISTFLOW_TENSOR_SHAPE_H_
#define DISTFLOW_TENSOR_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace distflow {

// The dimensions of a tensor: every size is known and >= 0. The default shape
// is a scalar ([]).
class TensorShape {
 public:
  TensorShape() = default;
  // For literals in code. Every size must be >= 0 (a negative literal is a
  // programming error and aborts); use FromDims for sizes that come from input.
  TensorShape(std::initializer_list<int64_t> dims);

  // INVALID_ARGUMENT for a negative size or a total element count that
  // overflows int64.
  static absl::StatusOr<TensorShape> FromDims(absl::Span<const int64_t> dims);

  int dims() const { return static_cast<int>(dims_.size()); }
  int64_t dim_size(int i) const { return dims_[i]; }
  const std::vector<int64_t>& dim_sizes() const { return dims_; }
  int64_t num_elements() const { return num_elements_; }

  // Appends a dimension; `size` must be >= 0.
  void AddDim(int64_t size);

  // "[1,4]"; a scalar is "[]".
  std::string DebugString() const;

  bool operator==(const TensorShape& other) const {
    return dims_ == other.dims_;
  }
  bool operator!=(const TensorShape& other) const {
    return dims_ != other.dims_;
  }

 private:
  std::vector<int64_t> dims_;
  int64_t num_elements_ = 1;
};

// A shape known only in part, as graph construction sees it: a dimension of -1
// is unknown, and the rank itself may be unknown (the default).
class PartialTensorShape {
 public:
  // Unknown rank.
  PartialTensorShape() = default;
  // Known rank; -1 marks an unknown size. Sizes below -1 are a programming
  // error.
  PartialTensorShape(std::initializer_list<int64_t> dims);
  PartialTensorShape(
      const TensorShape& shape);  // NOLINT: a known shape is a partial shape

  // INVALID_ARGUMENT for sizes below -1.
  static absl::StatusOr<PartialTensorShape> FromDims(
      absl::Span<const int64_t> dims);
  static PartialTensorShape UnknownRank() { return PartialTensorShape(); }
  // Known rank `rank`, every size unknown.
  static PartialTensorShape UnknownDims(int rank);

  bool unknown_rank() const { return unknown_rank_; }
  // The rank, or -1 if unknown.
  int dims() const {
    return unknown_rank_ ? -1 : static_cast<int>(dims_.size());
  }
  // The size of dimension i (-1 if unknown); the rank must be known.
  int64_t dim_size(int i) const { return dims_[i]; }
  const std::vector<int64_t>& dim_sizes() const { return dims_; }
  bool IsFullyDefined() const;
  // The number of elements, or -1 if not known.
  int64_t num_elements() const;

  // The shape as a TensorShape; INVALID_ARGUMENT unless fully defined.
  absl::StatusOr<TensorShape> AsTensorShape() const;

  // True if some fully defined shape agrees with both.
  bool IsCompatibleWith(const PartialTensorShape& other) const;
  // The most specific shape compatible with both; INVALID_ARGUMENT naming both
  // if incompatible.
  absl::StatusOr<PartialTensorShape> MergeWith(
      const PartialTensorShape& other) const;

  // "[?,4]"; unknown rank is "<unknown>".
  std::string DebugString() const;

  bool operator==(const PartialTensorShape& o) const {
    return unknown_rank_ == o.unknown_rank_ && dims_ == o.dims_;
  }
  bool operator!=(const PartialTensorShape& o) const { return !(*this == o); }

 private:
  bool unknown_rank_ = true;
  std::vector<int64_t> dims_;
};

}  // namespace distflow

#endif  // DISTFLOW_TENSOR_SHAPE_H_
