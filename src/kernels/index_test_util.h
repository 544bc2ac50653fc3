// Index arithmetic for naive reference implementations in array kernel tests.
#ifndef DISTFLOW_KERNELS_INDEX_TEST_UTIL_H_
#define DISTFLOW_KERNELS_INDEX_TEST_UTIL_H_

#include <cstdint>
#include <vector>

#include "distflow/tensor_shape.h"

namespace distflow {
namespace test {

// The position of flat (row-major) element `flat` of `shape`.
inline std::vector<int64_t> Unravel(int64_t flat, const TensorShape& shape) {
  std::vector<int64_t> pos(shape.dims());
  for (int d = shape.dims() - 1; d >= 0; --d) {
    pos[d] = flat % shape.dim_size(d);
    flat /= shape.dim_size(d);
  }
  return pos;
}

// The flat (row-major) index of position `pos` in `shape`.
inline int64_t Ravel(const std::vector<int64_t>& pos,
                     const TensorShape& shape) {
  int64_t flat = 0;
  for (int d = 0; d < shape.dims(); ++d)
    flat = flat * shape.dim_size(d) + pos[d];
  return flat;
}

}  // namespace test
}  // namespace distflow

#endif  // DISTFLOW_KERNELS_INDEX_TEST_UTIL_H_
