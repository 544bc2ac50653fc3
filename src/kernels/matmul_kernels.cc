// MatMul. float32 and float64 products run in OpenBLAS, single-threaded per
// call and split by rows or columns of the product over the intra-op pool, so
// that SessionOptions::intra_op_threads bounds the threads a product uses and
// OpenBLAS's own threads never compete with the pool's (measured in
// bench/matmul_bench.cc and docs/benchmarks.md). Integer products use Eigen's
// contraction on the pool.
#define EIGEN_USE_THREADS

#include <algorithm>
#include <array>
#include <mutex>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "cblas.h"
#include "core/type_dispatch.h"
#include "kernels/kernel_families.h"
#include "kernels/matmul.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace distflow {
namespace {

// Products with fewer multiply-adds than this run on the calling thread alone:
// handing a block to another thread costs more than it saves.
constexpr int64_t kMinParallelMacs = 1 << 19;
// Row/column blocks are multiples of this (the BLAS kernels' register tiles).
constexpr int64_t kBlockAlign = 16;

void UseSingleThreadedBlas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

template <typename T>
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a,
          int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc) {
  const CBLAS_TRANSPOSE ta_ = ta ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb_ = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta_, tb_, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c,
                ldc);
  } else {
    cblas_dgemm(CblasRowMajor, ta_, tb_, m, n, k, 1.0, a, lda, b, ldb, 0.0, c,
                ldc);
  }
}

template <typename T>
void EigenProduct(const T* a, const T* b, T* c, int64_t m, int64_t n, int64_t k,
                  bool ta, bool tb, ThreadPool* pool) {
  using Matrix = Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor>>;
  using OutMatrix = Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor>>;
  Matrix ma(a, ta ? k : m, ta ? m : k);
  Matrix mb(b, tb ? n : k, tb ? k : n);
  OutMatrix mo(c, m, n);
  const std::array<Eigen::IndexPair<Eigen::Index>, 1> dims = {
      Eigen::IndexPair<Eigen::Index>(ta ? 0 : 1, tb ? 1 : 0)};
  if (pool == nullptr) {
    mo = ma.contract(mb, dims);
  } else {
    mo.device(pool->eigen_device()) = ma.contract(mb, dims);
  }
}

}  // namespace

template <typename T>
void MatMulProduct(const T* a, const T* b, T* c, int64_t m, int64_t n,
                   int64_t k, bool ta, bool tb, ThreadPool* pool) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::fill_n(c, m * n, T(0));
    return;
  }
  if constexpr (std::is_floating_point_v<T>) {
    UseSingleThreadedBlas();
    const int64_t lda = ta ? m : k, ldb = tb ? k : n;
    // Split the longer side of the product into pieces of whole register
    // tiles, one per thread of the pool, the caller counting as one (more
    // pieces cost more than they even out: each packs the other operand
    // again, 2-15% more time at 4-6 pieces than at 2 in a single-threaded
    // measurement). The caller and the pool's threads claim pieces as they
    // come (ThreadPool::RunParts): a thread that wakes late, or is busy with
    // another op's piece, leaves its piece to the caller instead of holding
    // the product up.
    const bool by_rows = m >= n;
    const int64_t side = by_rows ? m : n;
    const int64_t blocks = (side + kBlockAlign - 1) / kBlockAlign;
    int64_t pieces = 1;
    if (pool != nullptr && m * n * k >= kMinParallelMacs) {
      pieces = std::min<int64_t>(
          {blocks, pool->NumThreads(), ThreadPool::HardwareThreads()});
    }
    if (pieces <= 1) {
      Gemm<T>(ta, tb, m, n, k, a, lda, b, ldb, c, n);
      return;
    }
    pool->RunParts(pieces, [&](int64_t p) {
      const int64_t begin = p * blocks / pieces * kBlockAlign;
      const int64_t end =
          std::min(side, (p + 1) * blocks / pieces * kBlockAlign);
      if (begin >= end) return;
      if (by_rows) {
        // Rows [begin, end) of op(a): row offset of a, or column offset of
        // the stored transpose.
        const T* ap = ta ? a + begin : a + begin * lda;
        Gemm<T>(ta, tb, end - begin, n, k, ap, lda, b, ldb, c + begin * n, n);
      } else {
        const T* bp = tb ? b + begin * ldb : b + begin;
        Gemm<T>(ta, tb, m, end - begin, k, a, lda, bp, ldb, c + begin, n);
      }
    });
  } else {
    EigenProduct<T>(a, b, c, m, n, k, ta, tb, pool);
  }
}

template void MatMulProduct<float>(const float*, const float*, float*, int64_t,
                                   int64_t, int64_t, bool, bool, ThreadPool*);
template void MatMulProduct<double>(const double*, const double*, double*,
                                    int64_t, int64_t, int64_t, bool, bool,
                                    ThreadPool*);
template void MatMulProduct<int32_t>(const int32_t*, const int32_t*, int32_t*,
                                     int64_t, int64_t, int64_t, bool, bool,
                                     ThreadPool*);
template void MatMulProduct<int64_t>(const int64_t*, const int64_t*, int64_t*,
                                     int64_t, int64_t, int64_t, bool, bool,
                                     ThreadPool*);

namespace {

class MatMulOp : public OpKernel {
 public:
  explicit MatMulOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    ctx->SetStatus(ctx->GetAttr("transpose_a", &transpose_a_));
    ctx->SetStatus(ctx->GetAttr("transpose_b", &transpose_b_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    DF_OP_REQUIRES(ctx, a.dims() == 2 && b.dims() == 2,
                   absl::InvalidArgumentError(
                       absl::StrCat("inputs must be matrices, got ",
                                    a.TypeString(), " and ", b.TypeString())));
    const int64_t m = a.dim_size(transpose_a_ ? 1 : 0);
    const int64_t ka = a.dim_size(transpose_a_ ? 0 : 1);
    const int64_t kb = b.dim_size(transpose_b_ ? 1 : 0);
    const int64_t n = b.dim_size(transpose_b_ ? 0 : 1);
    DF_OP_REQUIRES(
        ctx, ka == kb,
        absl::InvalidArgumentError(absl::StrCat(
            "inner dimensions differ: a is ", a.shape().DebugString(),
            ", b is ", b.shape().DebugString(), " (", ka, " vs ", kb, ")")));
    // [m, 0] x [0, n] has no elements to check, but m * n may overflow.
    auto shape = TensorShape::FromDims({m, n});
    DF_OP_REQUIRES(ctx, shape.ok(),
                   absl::InvalidArgumentError(
                       absl::StrCat("the product of ", a.TypeString(), " and ",
                                    b.TypeString(), " would have shape [", m,
                                    ",", n, "]: ", shape.status().message())));
    Tensor* out = ctx->allocate_output(0, a.dtype(), *shape);
    DF_OP_REQUIRES_OK(
        ctx, VisitNumericType(a.dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (std::is_same_v<T, uint8_t>) {
            return absl::InvalidArgumentError("MatMul does not support uint8");
          } else {
            MatMulProduct<T>(a.data<T>(), b.data<T>(), out->data<T>(), m, n, ka,
                             transpose_a_, transpose_b_, ctx->intra_op_pool());
            return absl::OkStatus();
          }
        }));
  }

 private:
  bool transpose_a_ = false;
  bool transpose_b_ = false;
};

}  // namespace

void RegisterMatMulKernels(KernelRegistry* r) {
  RegisterCpuKernel<MatMulOp>(r, "MatMul");
}

}  // namespace distflow
