// Copying a rectangular block of elements between row-major tensors: the one
// loop behind Slice, Pad, Tile, Concat, Split, Pack and Unpack.
#ifndef DISTFLOW_KERNELS_COPY_BOX_H_
#define DISTFLOW_KERNELS_COPY_BOX_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "base/thread_pool.h"

namespace distflow {

// Elements below which a copy runs on the calling thread.
inline constexpr int64_t kCopyParallelThreshold = 64 * 1024;

// Copies the block of extent `box` that starts at `src_begin` in `src` (of
// dimensions `src_dims`) to `dst_begin` in `dst` (of dimensions `dst_dims`).
// All spans have the same length (the rank, possibly 0); the block must lie
// inside both tensors. Large blocks are copied in parallel on `pool` (may be
// null).
template <typename T>
void CopyBox(const T* src, absl::Span<const int64_t> src_dims,
             absl::Span<const int64_t> src_begin, T* dst,
             absl::Span<const int64_t> dst_dims,
             absl::Span<const int64_t> dst_begin, absl::Span<const int64_t> box,
             ThreadPool* pool) {
  const int rank = static_cast<int>(box.size());
  int64_t total = 1;
  for (int64_t b : box) total *= b;
  if (total == 0) return;
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  std::vector<int64_t> ss(rank), ds(rank);
  int64_t s = 1, d = 1;
  for (int i = rank - 1; i >= 0; --i) {
    ss[i] = s;
    ds[i] = d;
    s *= src_dims[i];
    d *= dst_dims[i];
  }
  // Trailing dimensions that the block covers whole in both tensors join the
  // contiguous run copied at once.
  int j = rank - 1;
  int64_t run = box[j];
  while (j > 0 && box[j] == src_dims[j] && box[j] == dst_dims[j]) {
    --j;
    run *= box[j];
  }
  const int64_t rows = total / run;
  auto copy_rows = [&](int64_t begin, int64_t end) {
    // Index of row `begin` in dimensions [0, j), as an odometer.
    std::vector<int64_t> idx(j, 0);
    int64_t rest = begin;
    for (int k = j - 1; k >= 0; --k) {
      idx[k] = rest % box[k];
      rest /= box[k];
    }
    for (int64_t row = begin; row < end; ++row) {
      int64_t so = src_begin[j] * ss[j], dO = dst_begin[j] * ds[j];
      for (int k = 0; k < j; ++k) {
        so += (src_begin[k] + idx[k]) * ss[k];
        dO += (dst_begin[k] + idx[k]) * ds[k];
      }
      std::copy(src + so, src + so + run, dst + dO);
      for (int k = j - 1; k >= 0; --k) {
        if (++idx[k] < box[k]) break;
        idx[k] = 0;
      }
    }
  };
  if (pool != nullptr && total >= kCopyParallelThreshold && rows > 1) {
    pool->ParallelFor(rows, run, copy_rows);
  } else {
    copy_rows(0, rows);
  }
}

}  // namespace distflow

#endif  // DISTFLOW_KERNELS_COPY_BOX_H_
