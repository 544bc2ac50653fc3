// Shared by the reduction ops' shape functions and kernels: the meaning of an
// axes tensor.
#ifndef DISTFLOW_GRAPH_OPS_REDUCTION_OPS_H_
#define DISTFLOW_GRAPH_OPS_REDUCTION_OPS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "distflow/tensor.h"

namespace distflow {

// Which of `rank` dimensions the int32/int64 scalar or vector `axes` selects:
// entries in [-rank, rank), negative ones counting from the end.
// INVALID_ARGUMENT naming the axis and the rank for an entry out of range, a
// repeated axis, or an axes tensor of another type or rank.
absl::StatusOr<std::vector<bool>> ReductionAxes(const Tensor& axes, int rank);

// The one axis of ArgMax/ArgMin from the int32/int64 scalar `axis`, in
// [0, rank); INVALID_ARGUMENT naming it and the rank otherwise.
absl::StatusOr<int> SingleAxis(const Tensor& axis, int rank);

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_OPS_REDUCTION_OPS_H_
