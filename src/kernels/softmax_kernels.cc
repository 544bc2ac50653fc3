// Softmax and LogSoftmax along the last axis, and their gradient ops; parallel
// over rows, vectorized within a row by Eigen.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "kernels/kernel_families.h"
#include "kernels/softmax_util.h"

namespace distflow {
namespace {

template <bool kLog>
class SoftmaxOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    DF_OP_REQUIRES(ctx, logits.dims() >= 1,
                   absl::InvalidArgumentError(
                       absl::StrCat(type(), " needs logits of rank >= 1, got ",
                                    logits.shape().DebugString())));
    Tensor* out = ctx->allocate_output(0, logits.dtype(), logits.shape());
    const int64_t cols = logits.dim_size(logits.dims() - 1);
    if (cols == 0) return;
    const int64_t rows = logits.NumElements() / cols;
    DF_OP_REQUIRES_OK(ctx, VisitFloatType(logits.dtype(), [&](auto tag) {
                        using T = typename decltype(tag)::type;
                        const T* x = logits.data<T>();
                        T* y = out->data<T>();
                        ForEachRowRange(
                            ctx->intra_op_pool(), rows, cols,
                            [&](int64_t begin, int64_t end) {
                              for (int64_t r = begin; r < end; ++r) {
                                LogSoftmaxRow(x + r * cols, y + r * cols, cols);
                                if (!kLog) {
                                  RowArray<T> row(y + r * cols, cols);
                                  row = row.exp();
                                }
                              }
                            });
                        return absl::OkStatus();
                      }));
  }
};

// SoftmaxGrad(y, dy) = (dy - sum(dy * y)) * y;
// LogSoftmaxGrad(y, dy) = dy - exp(y) * sum(dy).
template <bool kLog>
class SoftmaxGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& y = ctx->input(0);
    const Tensor& dy = ctx->input(1);
    DF_OP_REQUIRES(
        ctx, y.dims() >= 1 && y.shape() == dy.shape(),
        absl::InvalidArgumentError(absl::StrCat(
            type(), " needs y and dy of one shape of rank >= 1, got ",
            y.shape().DebugString(), " and ", dy.shape().DebugString())));
    Tensor* out = ctx->allocate_output(0, y.dtype(), y.shape());
    const int64_t cols = y.dim_size(y.dims() - 1);
    if (cols == 0) return;
    const int64_t rows = y.NumElements() / cols;
    DF_OP_REQUIRES_OK(
        ctx, VisitFloatType(y.dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          ForEachRowRange(ctx->intra_op_pool(), rows, cols,
                          [&](int64_t begin, int64_t end) {
                            for (int64_t r = begin; r < end; ++r) {
                              ConstRowArray<T> yr(y.data<T>() + r * cols, cols);
                              ConstRowArray<T> gr(dy.data<T>() + r * cols,
                                                  cols);
                              RowArray<T> o(out->data<T>() + r * cols, cols);
                              if (kLog) {
                                o = gr - yr.exp() * gr.sum();
                              } else {
                                o = (gr - (gr * yr).sum()) * yr;
                              }
                            }
                          });
          return absl::OkStatus();
        }));
  }
};

}  // namespace

void RegisterSoftmaxKernels(KernelRegistry* r) {
  RegisterCpuKernel<SoftmaxOp<false>>(r, "Softmax");
  RegisterCpuKernel<SoftmaxOp<true>>(r, "LogSoftmax");
  RegisterCpuKernel<SoftmaxGradOp<false>>(r, "SoftmaxGrad");
  RegisterCpuKernel<SoftmaxGradOp<true>>(r, "LogSoftmaxGrad");
}

}  // namespace distflow
