// The matrix product behind the MatMul kernel, for kernels and benchmarks that
// multiply matrices directly.
#ifndef DISTFLOW_KERNELS_MATMUL_H_
#define DISTFLOW_KERNELS_MATMUL_H_

#include <cstdint>

#include "base/thread_pool.h"

namespace distflow {

// c [m,n] = op(a) op(b), all dense row-major; op(a) is [m,k] (a is stored
// [k,m] if ta), op(b) is [k,n] (b is stored [n,k] if tb). Uses up to
// pool->NumThreads() threads (pool may be null: one thread). Defined for
// float, double, int32_t and int64_t. float and double run in OpenBLAS, which
// this switches to one thread per call for the whole process on first use.
template <typename T>
void MatMulProduct(const T* a, const T* b, T* c, int64_t m, int64_t n,
                   int64_t k, bool ta, bool tb, ThreadPool* pool);

}  // namespace distflow

#endif  // DISTFLOW_KERNELS_MATMUL_H_
