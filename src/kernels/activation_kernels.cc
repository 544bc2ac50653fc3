// Relu, Sigmoid, Tanh and their gradient ops: elementwise, vectorized by Eigen
// and split across the intra-op threads for large tensors.
#define EIGEN_USE_THREADS

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "core/type_dispatch.h"
#include "kernels/kernel_families.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace distflow {
namespace {

// Elements below which a single thread is faster than splitting the work.
constexpr int64_t kParallelThreshold = 16 * 1024;

template <typename T>
using Flat = Eigen::TensorMap<Eigen::Tensor<T, 1, Eigen::RowMajor>>;
template <typename T>
using ConstFlat = Eigen::TensorMap<Eigen::Tensor<const T, 1, Eigen::RowMajor>>;

// Evaluates `expr` into `out`, on the intra-op threads when it is large.
template <typename T, typename Expr>
void Assign(OpKernelContext* ctx, Flat<T> out, const Expr& expr) {
  if (out.size() >= kParallelThreshold) {
    out.device(ctx->intra_op_pool()->eigen_device()) = expr;
  } else {
    out = expr;
  }
}

template <typename T>
ConstFlat<T> In(const Tensor& t) {
  return ConstFlat<T>(t.data<T>(), t.NumElements());
}

// Float32 or float64 dispatch; other types are rejected by the op definition.
template <typename Fn>
absl::Status VisitFloat(DataType dtype, Fn&& fn) {
  if (dtype == DataType::kFloat) return fn(TypeTag<float>{});
  if (dtype == DataType::kDouble) return fn(TypeTag<double>{});
  return absl::InvalidArgumentError(
      absl::StrCat("expected float32 or float64, got ", DataTypeName(dtype)));
}

enum class Activation { kRelu, kSigmoid, kTanh };

template <Activation A>
class ActivationOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* y = ctx->allocate_output(0, x.dtype(), x.shape());
    DF_OP_REQUIRES_OK(ctx, VisitFloat(x.dtype(), [&](auto tag) {
                        using T = typename decltype(tag)::type;
                        Flat<T> out(y->data<T>(), y->NumElements());
                        if constexpr (A == Activation::kRelu) {
                          Assign<T>(ctx, out, In<T>(x).cwiseMax(T(0)));
                        } else if constexpr (A == Activation::kSigmoid) {
                          Assign<T>(ctx, out, In<T>(x).sigmoid());
                        } else {
                          Assign<T>(ctx, out, In<T>(x).tanh());
                        }
                        return absl::OkStatus();
                      }));
  }
};

template <Activation A>
class ActivationGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    // ReluGrad(dy, features); SigmoidGrad and TanhGrad(y, dy).
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    DF_OP_REQUIRES(
        ctx, a.shape() == b.shape(),
        absl::InvalidArgumentError(absl::StrCat(
            type(), " needs inputs of one shape, got ", a.shape().DebugString(),
            " and ", b.shape().DebugString())));
    Tensor* z = ctx->allocate_output(0, a.dtype(), a.shape());
    DF_OP_REQUIRES_OK(ctx, VisitFloat(a.dtype(), [&](auto tag) {
                        using T = typename decltype(tag)::type;
                        Flat<T> out(z->data<T>(), z->NumElements());
                        auto ta = In<T>(a);
                        auto tb = In<T>(b);
                        if constexpr (A == Activation::kRelu) {
                          Assign<T>(ctx, out,
                                    (tb > T(0)).select(ta, ta.constant(T(0))));
                        } else if constexpr (A == Activation::kSigmoid) {
                          Assign<T>(ctx, out, tb * ta * (T(1) - ta));
                        } else {
                          Assign<T>(ctx, out, tb * (T(1) - ta * ta));
                        }
                        return absl::OkStatus();
                      }));
  }
};

}  // namespace

void RegisterActivationKernels(KernelRegistry* r) {
  RegisterCpuKernel<ActivationOp<Activation::kRelu>>(r, "Relu");
  RegisterCpuKernel<ActivationOp<Activation::kSigmoid>>(r, "Sigmoid");
  RegisterCpuKernel<ActivationOp<Activation::kTanh>>(r, "Tanh");
  RegisterCpuKernel<ActivationGradOp<Activation::kRelu>>(r, "ReluGrad");
  RegisterCpuKernel<ActivationGradOp<Activation::kSigmoid>>(r, "SigmoidGrad");
  RegisterCpuKernel<ActivationGradOp<Activation::kTanh>>(r, "TanhGrad");
}

}  // namespace distflow
