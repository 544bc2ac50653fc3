// Small helpers shared by the array op definitions and their kernels: reading
// index vectors and normalizing axes.
#ifndef DISTFLOW_GRAPH_OPS_ARRAY_UTIL_H_
#define DISTFLOW_GRAPH_OPS_ARRAY_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "distflow/tensor.h"

namespace distflow {

// True for int32 and int64, the index types of array ops.
inline bool IsIndexType(DataType t) {
  return t == DataType::kInt32 || t == DataType::kInt64;
}

// The elements of an int32 or int64 tensor (of any shape) as int64; other
// dtypes give an empty vector (the op definitions admit only these two).
inline std::vector<int64_t> IndexValues(const Tensor& t) {
  std::vector<int64_t> v;
  if (t.dtype() == DataType::kInt32) {
    for (int32_t x : t.flat<int32_t>()) v.push_back(x);
  } else if (t.dtype() == DataType::kInt64) {
    for (int64_t x : t.flat<int64_t>()) v.push_back(x);
  }
  return v;
}

// `axis` in [-rank, rank) mapped to [0, rank); INVALID_ARGUMENT naming `what`
// (such as "axis of Concat") and the valid range otherwise.
inline absl::StatusOr<int> NormalizeAxis(int64_t axis, int rank,
                                         const std::string& what) {
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is ", axis, " but must be in [", -rank, ", ", rank,
                     ") for a tensor of rank ", rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// The number of elements of Range(start, limit, delta): ceil((limit - start) /
// delta); INVALID_ARGUMENT naming the three if delta is 0 or points away from
// limit. Shared by Range's shape function and kernel.
absl::StatusOr<int64_t> RangeLength(double start, double limit, double delta);

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_OPS_ARRAY_UTIL_H_
