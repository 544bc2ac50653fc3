// Add, Sub, Mul (numpy broadcasting) and MatMul.
#define EIGEN_USE_THREADS

#include <array>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "core/type_dispatch.h"
#include "graph/shape_inference.h"
#include "kernels/kernel_families.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace distflow {
namespace {

// Elements below which splitting work across threads costs more than it saves.
constexpr int64_t kParallelThreshold = 32 * 1024;

// out[i] = f(x[ix], y[iy]) over the broadcast of x and y into out's shape.
template <typename T, typename F>
void BroadcastApply(const Tensor& x, const Tensor& y, Tensor* out, F f,
                    ThreadPool* pool) {
  const T* a = x.data<T>();
  const T* b = y.data<T>();
  T* z = out->data<T>();
  const int64_t n = out->NumElements();
  auto run = [&](auto&& body) {
    if (n >= kParallelThreshold) {
      pool->ParallelFor(n, 4, body);
    } else {
      body(0, n);
    }
  };
  if (x.shape() == y.shape()) {
    run([&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) z[i] = f(a[i], b[i]);
    });
    return;
  }
  if (y.NumElements() == 1 && x.NumElements() == n) {
    const T s = b[0];
    run([&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) z[i] = f(a[i], s);
    });
    return;
  }
  if (x.NumElements() == 1 && y.NumElements() == n) {
    const T s = a[0];
    run([&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) z[i] = f(s, b[i]);
    });
    return;
  }
  // General case: strides of x and y in the output's index space (0 along
  // broadcast dimensions).
  const TensorShape& os = out->shape();
  const int rank = os.dims();
  std::vector<int64_t> sx(rank, 0), sy(rank, 0);
  int64_t stride_x = 1, stride_y = 1;
  for (int d = rank - 1; d >= 0; --d) {
    const int dx = x.dims() - rank + d, dy = y.dims() - rank + d;
    const int64_t nx = dx >= 0 ? x.dim_size(dx) : 1;
    const int64_t ny = dy >= 0 ? y.dim_size(dy) : 1;
    sx[d] = nx == 1 ? 0 : stride_x;
    sy[d] = ny == 1 ? 0 : stride_y;
    stride_x *= nx;
    stride_y *= ny;
  }
  const int64_t inner = rank == 0 ? 1 : os.dim_size(rank - 1);
  const int64_t rows = inner == 0 ? 0 : n / inner;
  const int64_t ix_step = rank == 0 ? 0 : sx[rank - 1];
  const int64_t iy_step = rank == 0 ? 0 : sy[rank - 1];
  auto body = [&](int64_t row_begin, int64_t row_end) {
    for (int64_t row = row_begin; row < row_end; ++row) {
      // Offsets of this row's first element in x and y.
      int64_t ox = 0, oy = 0, rest = row;
      for (int d = rank - 2; d >= 0; --d) {
        const int64_t i = rest % os.dim_size(d);
        rest /= os.dim_size(d);
        ox += i * sx[d];
        oy += i * sy[d];
      }
      T* zr = z + row * inner;
      for (int64_t j = 0; j < inner; ++j)
        zr[j] = f(a[ox + j * ix_step], b[oy + j * iy_step]);
    }
  };
  if (n >= kParallelThreshold) {
    pool->ParallelFor(rows, 4 * inner, body);
  } else {
    body(0, rows);
  }
}

template <typename F>
class BinaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    auto shape = BroadcastShapes(x.shape(), y.shape());
    DF_OP_REQUIRES_OK(ctx, shape.status());
    auto out_shape = shape->AsTensorShape();
    DF_OP_REQUIRES_OK(ctx, out_shape.status());
    Tensor* out = ctx->allocate_output(0, x.dtype(), *out_shape);
    DF_OP_REQUIRES_OK(ctx, VisitNumericType(x.dtype(), [&](auto tag) {
                        using T = typename decltype(tag)::type;
                        BroadcastApply<T>(x, y, out, F(), ctx->intra_op_pool());
                        return absl::OkStatus();
                      }));
  }
};

struct AddFn {
  template <typename T>
  T operator()(T a, T b) const {
    return a + b;
  }
};
struct SubFn {
  template <typename T>
  T operator()(T a, T b) const {
    return a - b;
  }
};
struct MulFn {
  template <typename T>
  T operator()(T a, T b) const {
    return a * b;
  }
};

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
    Tensor* out = ctx->allocate_output(0, a.dtype(), TensorShape({m, n}));
    DF_OP_REQUIRES_OK(
        ctx, VisitNumericType(a.dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (std::is_same_v<T, uint8_t>) {
            return absl::InvalidArgumentError("MatMul does not support uint8");
          } else {
            Multiply<T>(a, b, out, ctx->intra_op_pool());
            return absl::OkStatus();
          }
        }));
  }

 private:
  template <typename T>
  void Multiply(const Tensor& a, const Tensor& b, Tensor* out,
                ThreadPool* pool) const {
    using Matrix = Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor>>;
    using OutMatrix = Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor>>;
    Matrix ma(a.data<T>(), a.dim_size(0), a.dim_size(1));
    Matrix mb(b.data<T>(), b.dim_size(0), b.dim_size(1));
    OutMatrix mo(out->data<T>(), out->dim_size(0), out->dim_size(1));
    if (out->NumElements() == 0) return;
    if (a.dim_size(transpose_a_ ? 0 : 1) == 0) {
      mo.setZero();
      return;
    }
    const std::array<Eigen::IndexPair<Eigen::Index>, 1> dims = {
        Eigen::IndexPair<Eigen::Index>(transpose_a_ ? 0 : 1,
                                       transpose_b_ ? 1 : 0)};
    mo.device(pool->eigen_device()) = ma.contract(mb, dims);
  }

  bool transpose_a_ = false;
  bool transpose_b_ = false;
};

}  // namespace

void RegisterMathKernels(KernelRegistry* r) {
  RegisterCpuKernel<BinaryOp<AddFn>>(r, "Add");
  RegisterCpuKernel<BinaryOp<SubFn>>(r, "Sub");
  RegisterCpuKernel<BinaryOp<MulFn>>(r, "Mul");
  RegisterCpuKernel<MatMulOp>(r, "MatMul");
}

}  // namespace distflow
