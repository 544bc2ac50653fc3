// Elementwise unary ops (Eigen array expressions over the flat buffers, split
// over the intra-op pool for large tensors) and Cast.
#include <cmath>
#include <type_traits>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "kernels/cwise_util.h"
#include "kernels/kernel_families.h"

namespace distflow {
namespace {

template <typename T>
using ConstArray = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using MutableArray = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

// Functors map an Eigen array expression to another; kFloatOnly ops are
// registered for float32 and float64 only (the op definitions say so), and
// kCost is the rough cycles per element.
struct NegFn {
  static constexpr int kCost = 1;
  template <typename A>
  auto operator()(const A& a) const {
    return -a;
  }
};
struct ExpFn {
  static constexpr int kCost = 12;
  template <typename A>
  auto operator()(const A& a) const {
    return a.exp();
  }
};
struct LogFn {
  static constexpr int kCost = 12;
  template <typename A>
  auto operator()(const A& a) const {
    return a.log();
  }
};
struct SqrtFn {
  static constexpr int kCost = 4;
  template <typename A>
  auto operator()(const A& a) const {
    return a.sqrt();
  }
};
struct RsqrtFn {
  static constexpr int kCost = 4;
  template <typename A>
  auto operator()(const A& a) const {
    return a.rsqrt();
  }
};
struct SquareFn {
  static constexpr int kCost = 1;
  template <typename A>
  auto operator()(const A& a) const {
    return a.square();
  }
};
struct ReciprocalFn {
  static constexpr int kCost = 4;
  template <typename A>
  auto operator()(const A& a) const {
    return a.inverse();
  }
};
struct AbsFn {
  static constexpr int kCost = 1;
  template <typename A>
  auto operator()(const A& a) const {
    return a.abs();
  }
};
struct SignFn {
  static constexpr int kCost = 1;
  template <typename A>
  auto operator()(const A& a) const {
    return a.sign();
  }
};
struct FloorFn {
  static constexpr int kCost = 1;
  template <typename A>
  auto operator()(const A& a) const {
    return a.floor();
  }
};

template <typename T, typename F>
void UnaryApply(const Tensor& x, Tensor* out, ThreadPool* pool) {
  const T* in = x.data<T>();
  T* o = out->data<T>();
  ParallelRange(pool, x.NumElements(), F::kCost,
                [&](int64_t begin, int64_t end) {
                  MutableArray<T>(o + begin, end - begin) =
                      F()(ConstArray<T>(in + begin, end - begin));
                });
}

// Unsigned values wrap under negation and are their own absolute value;
// Eigen's array functions do not cover those cases, so they loop here.
template <typename T, typename F>
void UnsignedApply(const Tensor& x, Tensor* out) {
  const T* in = x.data<T>();
  T* o = out->data<T>();
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    if constexpr (std::is_same_v<F, NegFn>) {
      o[i] = static_cast<T>(0u - in[i]);
    } else if constexpr (std::is_same_v<F, SquareFn>) {
      o[i] = static_cast<T>(in[i] * in[i]);
    } else if constexpr (std::is_same_v<F, SignFn>) {
      o[i] = in[i] > 0 ? 1 : 0;
    } else {
      o[i] = in[i];  // Abs
    }
  }
}

template <typename F, bool kFloatOnly>
class UnaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = ctx->allocate_output(0, x.dtype(), x.shape());
    DF_OP_REQUIRES_OK(
        ctx, VisitNumericType(x.dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (std::is_unsigned_v<T>) {
            if constexpr (!kFloatOnly) UnsignedApply<T, F>(x, out);
          } else if constexpr (kFloatOnly && !std::is_floating_point_v<T>) {
            return absl::InvalidArgumentError(absl::StrCat(
                type(), " needs float32 or float64, got ", x.TypeString()));
          } else {
            UnaryApply<T, F>(x, out, ctx->intra_op_pool());
          }
          return absl::OkStatus();
        }));
  }
};

class CastOp : public OpKernel {
 public:
  explicit CastOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    ctx->SetStatus(ctx->GetAttr("DstT", &dst_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    if (x.dtype() == dst_) {
      ctx->set_output(0, x);  // shares the buffer: tensors are immutable
      return;
    }
    Tensor* out = ctx->allocate_output(0, dst_, x.shape());
    DF_OP_REQUIRES_OK(ctx, VisitNumericOrBoolType(x.dtype(), [&](auto src_tag) {
                        using Src = typename decltype(src_tag)::type;
                        return VisitNumericOrBoolType(dst_, [&](auto dst_tag) {
                          using Dst = typename decltype(dst_tag)::type;
                          const Src* in = x.data<Src>();
                          Dst* o = out->data<Dst>();
                          ParallelRange(
                              ctx->intra_op_pool(), x.NumElements(), 1,
                              [&](int64_t begin, int64_t end) {
                                for (int64_t i = begin; i < end; ++i) {
                                  if constexpr (std::is_same_v<Dst, bool>) {
                                    o[i] = in[i] != Src(0);
                                  } else {
                                    o[i] = static_cast<Dst>(in[i]);
                                  }
                                }
                              });
                          return absl::OkStatus();
                        });
                      }));
  }

 private:
  DataType dst_ = DataType::kInvalid;
};

class LogicalNotOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = ctx->allocate_output(0, DataType::kBool, x.shape());
    const bool* in = x.data<bool>();
    bool* o = out->data<bool>();
    for (int64_t i = 0; i < x.NumElements(); ++i) o[i] = !in[i];
  }
};

}  // namespace

void RegisterCwiseUnaryKernels(KernelRegistry* r) {
  RegisterCpuKernel<UnaryOp<NegFn, false>>(r, "Neg");
  RegisterCpuKernel<UnaryOp<SquareFn, false>>(r, "Square");
  RegisterCpuKernel<UnaryOp<AbsFn, false>>(r, "Abs");
  RegisterCpuKernel<UnaryOp<SignFn, false>>(r, "Sign");
  RegisterCpuKernel<UnaryOp<ExpFn, true>>(r, "Exp");
  RegisterCpuKernel<UnaryOp<LogFn, true>>(r, "Log");
  RegisterCpuKernel<UnaryOp<SqrtFn, true>>(r, "Sqrt");
  RegisterCpuKernel<UnaryOp<RsqrtFn, true>>(r, "Rsqrt");
  RegisterCpuKernel<UnaryOp<ReciprocalFn, true>>(r, "Reciprocal");
  RegisterCpuKernel<UnaryOp<FloorFn, true>>(r, "Floor");
  RegisterCpuKernel<CastOp>(r, "Cast");
  RegisterCpuKernel<LogicalNotOp>(r, "LogicalNot");
}

}  // namespace distflow
