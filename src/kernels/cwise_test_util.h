// Reference computations for elementwise kernel tests: numpy broadcasting done
// one output element at a time with explicit index arithmetic.
#ifndef DISTFLOW_KERNELS_CWISE_TEST_UTIL_H_
#define DISTFLOW_KERNELS_CWISE_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "distflow/tensor.h"
#include "gtest/gtest.h"

namespace distflow {
namespace test {

// The numpy broadcast of `shapes`.
inline TensorShape BroadcastOf(const std::vector<TensorShape>& shapes) {
  int rank = 0;
  for (const TensorShape& s : shapes) rank = std::max(rank, s.dims());
  std::vector<int64_t> dims(rank, 1);
  for (const TensorShape& s : shapes) {
    for (int d = 0; d < s.dims(); ++d) {
      const int o = rank - s.dims() + d;
      if (s.dim_size(d) != 1) {
        EXPECT_TRUE(dims[o] == 1 || dims[o] == s.dim_size(d))
            << "test bug: shapes do not broadcast";
        dims[o] = s.dim_size(d);
      }
    }
  }
  return *TensorShape::FromDims(dims);
}

// The row-major offset in a tensor of `shape` of the element that the output
// multi-index `index` reads (size-1 dimensions pinned to 0).
inline int64_t BroadcastSource(const TensorShape& shape,
                               const std::vector<int64_t>& index) {
  const int rank = static_cast<int>(index.size());
  int64_t offset = 0;
  for (int d = 0; d < shape.dims(); ++d) {
    const int64_t size = shape.dim_size(d);
    offset = offset * size + (size == 1 ? 0 : index[rank - shape.dims() + d]);
  }
  return offset;
}

// Calls fn(out_index, source offsets) for every element of the broadcast of
// `shapes`, in row-major order.
template <typename Fn>
void ForEachBroadcastElement(const std::vector<TensorShape>& shapes, Fn fn) {
  const TensorShape out = BroadcastOf(shapes);
  std::vector<int64_t> index(out.dims());
  std::vector<int64_t> offsets(shapes.size());
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    int64_t rest = i;
    for (int d = out.dims() - 1; d >= 0; --d) {
      index[d] = rest % out.dim_size(d);
      rest /= out.dim_size(d);
    }
    for (size_t k = 0; k < shapes.size(); ++k)
      offsets[k] = BroadcastSource(shapes[k], index);
    fn(i, offsets);
  }
}

// out[i] = f(x[..], y[..]) over the broadcast, as a tensor of element type R.
template <typename R, typename T, typename F>
Tensor BinaryReference(const Tensor& x, const Tensor& y, F f) {
  Tensor out(DataTypeOf<R>::value, BroadcastOf({x.shape(), y.shape()}));
  auto a = x.flat<T>();
  auto b = y.flat<T>();
  auto z = out.flat<R>();
  ForEachBroadcastElement({x.shape(), y.shape()},
                          [&](int64_t i, const std::vector<int64_t>& o) {
                            z[i] = static_cast<R>(f(a[o[0]], b[o[1]]));
                          });
  return out;
}

// Success if `got` and `want` have one dtype and shape and elements within
// `tolerance` * max(1, |want|) (NaNs must match NaNs).
template <typename T>
::testing::AssertionResult TensorsNear(const Tensor& got, const Tensor& want,
                                       double tolerance) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return ::testing::AssertionFailure()
           << "got " << got.TypeString() << ", want " << want.TypeString();
  }
  auto g = got.flat<T>();
  auto w = want.flat<T>();
  for (size_t i = 0; i < g.size(); ++i) {
    const double gi = g[i], wi = w[i];
    const bool same = gi == wi || (gi != gi && wi != wi);  // inf, NaN
    if (!same &&
        !(std::abs(gi - wi) <= tolerance * std::max(1.0, std::abs(wi)))) {
      return ::testing::AssertionFailure()
             << "element " << i << " of " << got.TypeString() << ": got " << gi
             << ", want " << wi;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace test
}  // namespace distflow

#endif  // DISTFLOW_KERNELS_CWISE_TEST_UTIL_H_
