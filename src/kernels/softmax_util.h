// Row-wise helpers shared by the softmax and cross-entropy kernels: a tensor
// seen as rows along its last axis, processed in parallel over rows.
#ifndef DISTFLOW_KERNELS_SOFTMAX_UTIL_H_
#define DISTFLOW_KERNELS_SOFTMAX_UTIL_H_

#include <cstdint>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/thread_pool.h"
#include "core/type_dispatch.h"

namespace distflow {

template <typename T>
using RowArray = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstRowArray = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// Calls fn(begin, end) over row ranges covering [0, rows): on the intra-op
// threads when the work (rows * cols) is large enough to pay for it.
template <typename Fn>
void ForEachRowRange(ThreadPool* pool, int64_t rows, int64_t cols, Fn&& fn) {
  constexpr int64_t kParallelThreshold = 16 * 1024;
  if (rows * cols < kParallelThreshold || rows < 2) {
    fn(int64_t{0}, rows);
    return;
  }
  // About 10 cycles per element: exp dominates.
  pool->ParallelFor(rows, 10 * cols, fn);
}

// Float32 or float64 dispatch; other types are rejected by the op definitions.
template <typename Fn>
absl::Status VisitFloatType(DataType dtype, Fn&& fn) {
  if (dtype == DataType::kFloat) return fn(TypeTag<float>{});
  if (dtype == DataType::kDouble) return fn(TypeTag<double>{});
  return absl::InvalidArgumentError(
      absl::StrCat("expected float32 or float64, got ", DataTypeName(dtype)));
}

// out = logits - max - log(sum(exp(logits - max))): the stable log-softmax of
// one row. `out` may alias `logits`.
template <typename T>
void LogSoftmaxRow(const T* logits, T* out, int64_t n) {
  ConstRowArray<T> x(logits, n);
  RowArray<T> y(out, n);
  const T max = x.maxCoeff();
  y = x - max;
  const T log_sum = std::log(y.exp().sum());
  y -= log_sum;
}

}  // namespace distflow

#endif  // DISTFLOW_KERNELS_SOFTMAX_UTIL_H_
