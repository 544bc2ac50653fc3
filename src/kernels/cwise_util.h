// Helpers for elementwise kernels: splitting flat work over the intra-op pool,
// and iterating the numpy broadcast of several inputs into an output in
// contiguous segments that vectorize.
#ifndef DISTFLOW_KERNELS_CWISE_UTIL_H_
#define DISTFLOW_KERNELS_CWISE_UTIL_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/thread_pool.h"
#include "core/type_dispatch.h"
#include "distflow/tensor.h"

namespace distflow {

// Elements below which splitting work across threads costs more than it saves.
inline constexpr int64_t kCwiseParallelThreshold = 32 * 1024;

// Calls fn(begin, end) over [0, n): split across `pool` for large n (each
// element costing about `cost` cycles), inline otherwise.
template <typename Fn>
void ParallelRange(ThreadPool* pool, int64_t n, int64_t cost, Fn&& fn) {
  if (n * cost >= kCwiseParallelThreshold && pool != nullptr &&
      pool->NumThreads() > 1) {
    pool->ParallelFor(n, cost, fn);
  } else if (n > 0) {
    fn(int64_t{0}, n);
  }
}

// fn(TypeTag<T>{}) for numeric types and bool; INVALID_ARGUMENT otherwise.
template <typename Fn>
absl::Status VisitNumericOrBoolType(DataType dtype, Fn&& fn) {
  if (dtype == DataType::kBool) return fn(TypeTag<bool>{});
  return VisitNumericType(dtype, fn);
}

// How N inputs map onto an output under numpy broadcasting, with adjacent
// dimensions merged whenever every input either spans both or broadcasts
// along both; so the innermost merged dimension is as long as possible and
// each input either walks it contiguously or repeats one element along it.
template <int N>
struct BroadcastPlan {
  std::vector<int64_t> dims;                    // merged output dims (>= 1)
  std::array<std::vector<int64_t>, N> strides;  // 0 along broadcast dims
  std::array<bool, N> inner_contiguous;         // inner stride is 1 (else 0)
  int64_t num_elements = 0;

  // Every input's shape must broadcast to `out` (the caller checked).
  BroadcastPlan(const std::array<const TensorShape*, N>& in,
                const TensorShape& out) {
    num_elements = out.num_elements();
    const int rank = out.dims();
    std::vector<uint32_t> masks;  // bit i: input i broadcasts along the dim
    for (int d = 0; d < rank; ++d) {
      const int64_t size = out.dim_size(d);
      if (size == 1) continue;  // every input has size 1 here too
      uint32_t mask = 0;
      for (int i = 0; i < N; ++i) {
        const int di = in[i]->dims() - rank + d;
        if (di < 0 || in[i]->dim_size(di) == 1) mask |= 1u << i;
      }
      if (!masks.empty() && masks.back() == mask) {
        dims.back() *= size;
      } else {
        dims.push_back(size);
        masks.push_back(mask);
      }
    }
    if (dims.empty()) {
      dims.push_back(1);
      masks.push_back(0);
    }
    for (int i = 0; i < N; ++i) {
      strides[i].assign(dims.size(), 0);
      int64_t running = 1;
      for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
        if (!(masks[d] & (1u << i))) {
          strides[i][d] = running;
          running *= dims[d];
        }
      }
      inner_contiguous[i] = strides[i].back() == 1;
    }
  }

  // Calls fn(out_offset, in_offsets, count) for runs of `count` consecutive
  // output elements, along which input i advances by inner_contiguous[i] per
  // element. Runs cover the output exactly once; large outputs are split over
  // `pool` (about `cost` cycles per element).
  template <typename Fn>
  void ForEachSegment(ThreadPool* pool, int64_t cost, Fn&& fn) const {
    const int64_t inner = dims.back();
    const int outer_rank = static_cast<int>(dims.size()) - 1;
    ParallelRange(pool, num_elements, cost, [&](int64_t begin, int64_t end) {
      // Position of `begin`: its row's multi-index and the inputs' offsets.
      int64_t row = begin / inner;
      int64_t col = begin % inner;
      std::vector<int64_t> index(outer_rank);
      std::array<int64_t, N> base{};
      for (int d = outer_rank - 1; d >= 0; --d) {
        index[d] = row % dims[d];
        row /= dims[d];
        for (int i = 0; i < N; ++i) base[i] += index[d] * strides[i][d];
      }
      int64_t pos = begin;
      while (pos < end) {
        const int64_t count = std::min(inner - col, end - pos);
        std::array<int64_t, N> offsets;
        for (int i = 0; i < N; ++i)
          offsets[i] = base[i] + (inner_contiguous[i] ? col : 0);
        fn(pos, offsets, count);
        pos += count;
        col = 0;
        // Next row: an odometer over the outer dimensions.
        for (int d = outer_rank - 1; d >= 0; --d) {
          for (int i = 0; i < N; ++i) base[i] += strides[i][d];
          if (++index[d] < dims[d]) break;
          for (int i = 0; i < N; ++i) base[i] -= strides[i][d] * dims[d];
          index[d] = 0;
        }
      }
    });
  }
};

}  // namespace distflow

#endif  // DISTFLOW_KERNELS_CWISE_UTIL_H_
