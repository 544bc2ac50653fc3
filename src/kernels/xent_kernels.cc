// Softmax cross-entropy losses (sparse class labels or dense distributions)
// and CrossEntropyGrad, the op scaling their backprop by the loss gradient.
// Parallel over rows, vectorized within a row.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "kernels/kernel_families.h"
#include "kernels/softmax_util.h"

namespace distflow {
namespace {

// INVALID_ARGUMENT naming `op` and both shapes unless logits is [N, C] and
// labels is [N] (sparse) or [N, C] (dense).
absl::Status CheckXentShapes(const std::string& op, const Tensor& logits,
                             const Tensor& labels, bool sparse) {
  const bool ok =
      logits.dims() == 2 &&
      (sparse ? labels.dims() == 1 && labels.dim_size(0) == logits.dim_size(0)
              : labels.shape() == logits.shape());
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      op, " needs logits [N, C] and labels ", sparse ? "[N]" : "[N, C]",
      ", got logits ", logits.shape().DebugString(), " and labels ",
      labels.shape().DebugString()));
}

template <typename L>
absl::Status CheckLabels(const Tensor& labels, int64_t classes) {
  const L* l = labels.data<L>();
  for (int64_t r = 0; r < labels.NumElements(); ++r) {
    if (l[r] < 0 || l[r] >= classes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "label ", l[r], " of row ", r, " is outside the valid range [0, ",
          classes, "): there are ", classes,
          " classes; labels must be class indices"));
    }
  }
  return absl::OkStatus();
}

class SparseXentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    DF_OP_REQUIRES_OK(ctx, CheckXentShapes(type(), logits, labels, true));
    const int64_t rows = logits.dim_size(0), cols = logits.dim_size(1);
    const bool int32_labels = labels.dtype() == DataType::kInt32;
    DF_OP_REQUIRES_OK(ctx, int32_labels ? CheckLabels<int32_t>(labels, cols)
                                        : CheckLabels<int64_t>(labels, cols));
    Tensor* loss = ctx->allocate_output(0, logits.dtype(), TensorShape({rows}));
    Tensor* backprop = ctx->allocate_output(1, logits.dtype(), logits.shape());
    DF_OP_REQUIRES_OK(ctx, VisitFloatType(logits.dtype(), [&](auto tag) {
                        using T = typename decltype(tag)::type;
                        const T* x = logits.data<T>();
                        T* l = loss->data<T>();
                        T* b = backprop->data<T>();
                        ForEachRowRange(
                            ctx->intra_op_pool(), rows, cols,
                            [&](int64_t begin, int64_t end) {
                              for (int64_t r = begin; r < end; ++r) {
                                const int64_t label =
                                    int32_labels ? labels.data<int32_t>()[r]
                                                 : labels.data<int64_t>()[r];
                                T* br = b + r * cols;
                                LogSoftmaxRow(x + r * cols, br, cols);
                                l[r] = -br[label];
                                RowArray<T> row(br, cols);
                                row = row.exp();
                                br[label] -= T(1);
                              }
                            });
                        return absl::OkStatus();
                      }));
  }
};

class XentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    DF_OP_REQUIRES_OK(ctx, CheckXentShapes(type(), logits, labels, false));
    const int64_t rows = logits.dim_size(0), cols = logits.dim_size(1);
    Tensor* loss = ctx->allocate_output(0, logits.dtype(), TensorShape({rows}));
    Tensor* backprop = ctx->allocate_output(1, logits.dtype(), logits.shape());
    DF_OP_REQUIRES_OK(
        ctx, VisitFloatType(logits.dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          T* l = loss->data<T>();
          if (cols == 0) {  // no classes: nothing to lose
            for (int64_t r = 0; r < rows; ++r) l[r] = T(0);
            return absl::OkStatus();
          }
          ForEachRowRange(
              ctx->intra_op_pool(), rows, cols,
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  T* br = backprop->data<T>() + r * cols;
                  ConstRowArray<T> p(labels.data<T>() + r * cols, cols);
                  LogSoftmaxRow(logits.data<T>() + r * cols, br, cols);
                  RowArray<T> row(br, cols);
                  l[r] = -(p * row).sum();
                  row = row.exp() - p;
                }
              });
          return absl::OkStatus();
        }));
  }
};

class CrossEntropyGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& backprop = ctx->input(0);
    const Tensor& dloss = ctx->input(1);
    DF_OP_REQUIRES(
        ctx,
        backprop.dims() == 2 && dloss.dims() == 1 &&
            dloss.dim_size(0) == backprop.dim_size(0),
        absl::InvalidArgumentError(absl::StrCat(
            "CrossEntropyGrad needs backprop [N, C] and dloss [N], got ",
            backprop.shape().DebugString(), " and ",
            dloss.shape().DebugString())));
    Tensor* out = ctx->allocate_output(0, backprop.dtype(), backprop.shape());
    const int64_t rows = backprop.dim_size(0), cols = backprop.dim_size(1);
    DF_OP_REQUIRES_OK(ctx, VisitFloatType(backprop.dtype(), [&](auto tag) {
                        using T = typename decltype(tag)::type;
                        ForEachRowRange(
                            ctx->intra_op_pool(), rows, cols,
                            [&](int64_t begin, int64_t end) {
                              for (int64_t r = begin; r < end; ++r) {
                                ConstRowArray<T> b(
                                    backprop.data<T>() + r * cols, cols);
                                RowArray<T> o(out->data<T>() + r * cols, cols);
                                o = b * dloss.data<T>()[r];
                              }
                            });
                        return absl::OkStatus();
                      }));
  }
};

}  // namespace

void RegisterXentKernels(KernelRegistry* r) {
  RegisterCpuKernel<SparseXentOp>(r, "SparseSoftmaxCrossEntropyWithLogits");
  RegisterCpuKernel<XentOp>(r, "SoftmaxCrossEntropyWithLogits");
  RegisterCpuKernel<CrossEntropyGradOp>(r, "CrossEntropyGrad");
}

}  // namespace distflow
