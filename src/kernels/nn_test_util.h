// Comparison helper for the neural-network kernel tests, whose references are
// computed another way (naive loops in long double) and so match only up to
// rounding.
#ifndef DISTFLOW_KERNELS_NN_TEST_UTIL_H_
#define DISTFLOW_KERNELS_NN_TEST_UTIL_H_

#include <cmath>
#include <cstdint>

#include "distflow/tensor.h"
#include "gtest/gtest.h"

namespace distflow {
namespace test {

// Success if `got` and `want` have one dtype and shape and every element
// differs by at most atol + rtol * |want|; otherwise names the first element
// that does not.
template <typename T>
::testing::AssertionResult AllClose(const Tensor& got, const Tensor& want,
                                    double atol, double rtol = 0) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return ::testing::AssertionFailure()
           << "got " << got.TypeString() << ", want " << want.TypeString();
  }
  const T* g = got.data<T>();
  const T* w = want.data<T>();
  for (int64_t i = 0; i < got.NumElements(); ++i) {
    const double diff = std::abs(static_cast<double>(g[i]) - w[i]);
    if (!(diff <= atol + rtol * std::abs(static_cast<double>(w[i])))) {
      return ::testing::AssertionFailure()
             << "element " << i << " of " << got.TypeString()
             << " differs: got " << g[i] << ", want " << w[i];
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace test
}  // namespace distflow

#endif  // DISTFLOW_KERNELS_NN_TEST_UTIL_H_
