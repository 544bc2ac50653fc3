// Elementwise binary ops with numpy broadcasting (arithmetic, comparisons,
// logic), Select, BiasAdd and BroadcastGradientArgs.
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "graph/shape_inference.h"
#include "kernels/cwise_util.h"
#include "kernels/kernel_families.h"

namespace distflow {
namespace {

// out = f(x, y) over the broadcast; out already has the broadcast shape.
// Segments where an input repeats one element hoist it out of the loop, so
// every loop below is a plain vectorizable pass over contiguous memory.
template <typename Tin, typename Tout, typename F>
void BinaryApply(const Tensor& x, const Tensor& y, Tensor* out, F f,
                 ThreadPool* pool) {
  const BroadcastPlan<2> plan({&x.shape(), &y.shape()}, out->shape());
  const Tin* a = x.data<Tin>();
  const Tin* b = y.data<Tin>();
  Tout* z = out->data<Tout>();
  const bool ca = plan.inner_contiguous[0], cb = plan.inner_contiguous[1];
  plan.ForEachSegment(
      pool, F::kCost,
      [&](int64_t zo, const std::array<int64_t, 2>& o, int64_t count) {
        Tout* __restrict zz = z + zo;
        const Tin* __restrict aa = a + o[0];
        const Tin* __restrict bb = b + o[1];
        if (ca && cb) {
          for (int64_t j = 0; j < count; ++j) zz[j] = f(aa[j], bb[j]);
        } else if (ca) {
          const Tin s = *bb;
          for (int64_t j = 0; j < count; ++j) zz[j] = f(aa[j], s);
        } else if (cb) {
          const Tin s = *aa;
          for (int64_t j = 0; j < count; ++j) zz[j] = f(s, bb[j]);
        } else {
          const Tout v = f(*aa, *bb);
          for (int64_t j = 0; j < count; ++j) zz[j] = v;
        }
      });
}

// ---- Functors: `kCost` is the rough cycles per element. ----

struct AddFn {
  static constexpr int kCost = 1;
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a + b);
  }
};
struct SubFn {
  static constexpr int kCost = 1;
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a - b);
  }
};
struct MulFn {
  static constexpr int kCost = 1;
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a * b);
  }
};
// Integer divisors were checked to be nonzero. The most negative value divided
// by -1 wraps instead of trapping.
struct DivFn {
  static constexpr int kCost = 4;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      if (b == -1) {
        return static_cast<T>(0u - static_cast<std::make_unsigned_t<T>>(a));
      }
    }
    return static_cast<T>(a / b);
  }
};
// Integer exponents were checked to be >= 0. Integer powers wrap on overflow.
struct PowFn {
  static constexpr int kCost = 40;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::pow(a, b);
    } else {
      using U = std::make_unsigned_t<T>;
      U result = 1, base = static_cast<U>(a);
      for (U e = static_cast<U>(b); e != 0; e >>= 1) {
        if (e & 1) result = static_cast<U>(result * base);
        base = static_cast<U>(base * base);
      }
      return static_cast<T>(result);
    }
  }
};
struct MaximumFn {
  static constexpr int kCost = 1;
  template <typename T>
  T operator()(T a, T b) const {
    return a > b ? a : b;
  }
};
struct MinimumFn {
  static constexpr int kCost = 1;
  template <typename T>
  T operator()(T a, T b) const {
    return a < b ? a : b;
  }
};
struct SquaredDifferenceFn {
  static constexpr int kCost = 2;
  template <typename T>
  T operator()(T a, T b) const {
    const T d = static_cast<T>(a - b);
    return static_cast<T>(d * d);
  }
};

#define DISTFLOW_COMPARISON_FN_(Name, expr) \
  struct Name {                             \
    static constexpr int kCost = 1;         \
    template <typename T>                   \
    bool operator()(T a, T b) const {       \
      return expr;                          \
    }                                       \
  };
DISTFLOW_COMPARISON_FN_(EqualFn, a == b)
DISTFLOW_COMPARISON_FN_(NotEqualFn, a != b)
DISTFLOW_COMPARISON_FN_(LessFn, a < b)
DISTFLOW_COMPARISON_FN_(LessEqualFn, a <= b)
DISTFLOW_COMPARISON_FN_(GreaterFn, a > b)
DISTFLOW_COMPARISON_FN_(GreaterEqualFn, a >= b)
DISTFLOW_COMPARISON_FN_(LogicalAndFn, a&& b)
DISTFLOW_COMPARISON_FN_(LogicalOrFn, a || b)
#undef DISTFLOW_COMPARISON_FN_

// The broadcast shape of the kernel's inputs 0 and 1, or INVALID_ARGUMENT
// naming both.
absl::StatusOr<TensorShape> OutputShape(const Tensor& x, const Tensor& y) {
  DF_ASSIGN_OR_RETURN(PartialTensorShape shape,
                      BroadcastShapes(x.shape(), y.shape()));
  return shape.AsTensorShape();
}

// Checks that integer inputs of Div and Pow are in their domain.
template <typename F, typename T>
absl::Status CheckDomain(const Tensor& y) {
  if constexpr (std::is_integral_v<T> && std::is_same_v<F, DivFn>) {
    for (T v : y.flat<T>()) {
      if (v == 0) {
        return absl::InvalidArgumentError(
            "integer division by zero: the divisor y holds a 0 (divide floats "
            "or mask the zeros first)");
      }
    }
  }
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T> &&
                std::is_same_v<F, PowFn>) {
    for (T v : y.flat<T>()) {
      if (v < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "integer to a negative power (", static_cast<int64_t>(v),
            ") is not an integer; cast to float first"));
      }
    }
  }
  return absl::OkStatus();
}

// Arithmetic: T in, T out, any numeric T.
template <typename F>
class ArithmeticOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    auto shape = OutputShape(x, y);
    DF_OP_REQUIRES_OK(ctx, shape.status());
    DF_OP_REQUIRES_OK(ctx, VisitNumericType(x.dtype(), [&](auto tag) {
                        using T = typename decltype(tag)::type;
                        DF_RETURN_IF_ERROR((CheckDomain<F, T>(y)));
                        Tensor* out =
                            ctx->allocate_output(0, x.dtype(), *shape);
                        BinaryApply<T, T>(x, y, out, F(), ctx->intra_op_pool());
                        return absl::OkStatus();
                      }));
  }
};

// Comparisons and logic: bool out.
template <typename F>
class PredicateOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    auto shape = OutputShape(x, y);
    DF_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = ctx->allocate_output(0, DataType::kBool, *shape);
    DF_OP_REQUIRES_OK(ctx, VisitNumericOrBoolType(x.dtype(), [&](auto tag) {
                        using T = typename decltype(tag)::type;
                        BinaryApply<T, bool>(x, y, out, F(),
                                             ctx->intra_op_pool());
                        return absl::OkStatus();
                      }));
  }
};

class SelectOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& cond = ctx->input(0);
    const Tensor& t = ctx->input(1);
    const Tensor& e = ctx->input(2);
    auto te = BroadcastShapes(t.shape(), e.shape());
    DF_OP_REQUIRES_OK(ctx, te.status());
    auto all = BroadcastShapes(cond.shape(), *te);
    DF_OP_REQUIRES(
        ctx, all.ok(),
        absl::InvalidArgumentError(absl::StrCat(
            "condition of shape ", cond.shape().DebugString(),
            " does not broadcast with t and e of shape ", te->DebugString())));
    auto shape = all->AsTensorShape();
    DF_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = ctx->allocate_output(0, t.dtype(), *shape);
    const BroadcastPlan<3> plan({&cond.shape(), &t.shape(), &e.shape()},
                                *shape);
    DF_OP_REQUIRES_OK(
        ctx, VisitNumericOrBoolType(t.dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          const bool* c = cond.data<bool>();
          const T* a = t.data<T>();
          const T* b = e.data<T>();
          T* z = out->data<T>();
          const int64_t sc = plan.inner_contiguous[0],
                        sa = plan.inner_contiguous[1],
                        sb = plan.inner_contiguous[2];
          plan.ForEachSegment(
              ctx->intra_op_pool(), 2,
              [&](int64_t zo, const std::array<int64_t, 3>& o, int64_t n) {
                for (int64_t j = 0; j < n; ++j) {
                  z[zo + j] =
                      c[o[0] + j * sc] ? a[o[1] + j * sa] : b[o[2] + j * sb];
                }
              });
          return absl::OkStatus();
        }));
  }
};

class BiasAddOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    DF_OP_REQUIRES(
        ctx,
        value.dims() >= 1 && bias.dims() == 1 &&
            bias.dim_size(0) == value.dim_size(value.dims() - 1),
        absl::InvalidArgumentError(absl::StrCat(
            "bias must be a vector as long as the last dimension of value; "
            "got value ",
            value.shape().DebugString(), " and bias ",
            bias.shape().DebugString())));
    Tensor* out = ctx->allocate_output(0, value.dtype(), value.shape());
    DF_OP_REQUIRES_OK(ctx, VisitNumericType(value.dtype(), [&](auto tag) {
                        using T = typename decltype(tag)::type;
                        BinaryApply<T, T>(value, bias, out, AddFn(),
                                          ctx->intra_op_pool());
                        return absl::OkStatus();
                      }));
  }
};

class BroadcastGradientArgsOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    DF_OP_REQUIRES_OK(
        ctx, VisitNumericType(ctx->input(0).dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          std::vector<int64_t> s[2];
          for (int k = 0; k < 2; ++k) {
            const Tensor& in = ctx->input(k);
            if (in.dims() != 1) {
              return absl::InvalidArgumentError(absl::StrCat(
                  "s", k, " must be a shape vector, got ", in.TypeString()));
            }
            for (T v : in.flat<T>()) s[k].push_back(static_cast<int64_t>(v));
          }
          const int rank = static_cast<int>(std::max(s[0].size(), s[1].size()));
          std::vector<T> r[2];
          for (int d = 0; d < rank; ++d) {
            int64_t size[2];
            for (int k = 0; k < 2; ++k) {
              const int dk = static_cast<int>(s[k].size()) - rank + d;
              size[k] = dk >= 0 ? s[k][dk] : 1;
            }
            if (size[0] != size[1] && size[0] != 1 && size[1] != 1) {
              return absl::InvalidArgumentError(absl::StrCat(
                  "shapes [", absl::StrJoin(s[0], ","), "] and [",
                  absl::StrJoin(s[1], ","), "] cannot be broadcast"));
            }
            const int64_t out = size[0] == 1 ? size[1] : size[0];
            for (int k = 0; k < 2; ++k) {
              // Summing over a size-1 output dimension changes nothing; the
              // caller's Reshape restores the input's rank.
              if (size[k] == 1 && out != 1) r[k].push_back(static_cast<T>(d));
            }
          }
          for (int k = 0; k < 2; ++k) {
            ctx->set_output(k, Tensor::Vector<T>(r[k]));
          }
          return absl::OkStatus();
        }));
  }
};

}  // namespace

void RegisterCwiseBinaryKernels(KernelRegistry* r) {
  RegisterCpuKernel<ArithmeticOp<AddFn>>(r, "Add");
  RegisterCpuKernel<ArithmeticOp<SubFn>>(r, "Sub");
  RegisterCpuKernel<ArithmeticOp<MulFn>>(r, "Mul");
  RegisterCpuKernel<ArithmeticOp<DivFn>>(r, "Div");
  RegisterCpuKernel<ArithmeticOp<PowFn>>(r, "Pow");
  RegisterCpuKernel<ArithmeticOp<MaximumFn>>(r, "Maximum");
  RegisterCpuKernel<ArithmeticOp<MinimumFn>>(r, "Minimum");
  RegisterCpuKernel<ArithmeticOp<SquaredDifferenceFn>>(r, "SquaredDifference");
  RegisterCpuKernel<PredicateOp<EqualFn>>(r, "Equal");
  RegisterCpuKernel<PredicateOp<NotEqualFn>>(r, "NotEqual");
  RegisterCpuKernel<PredicateOp<LessFn>>(r, "Less");
  RegisterCpuKernel<PredicateOp<LessEqualFn>>(r, "LessEqual");
  RegisterCpuKernel<PredicateOp<GreaterFn>>(r, "Greater");
  RegisterCpuKernel<PredicateOp<GreaterEqualFn>>(r, "GreaterEqual");
  RegisterCpuKernel<PredicateOp<LogicalAndFn>>(r, "LogicalAnd");
  RegisterCpuKernel<PredicateOp<LogicalOrFn>>(r, "LogicalOr");
  RegisterCpuKernel<SelectOp>(r, "Select");
  RegisterCpuKernel<BiasAddOp>(r, "BiasAdd");
  RegisterCpuKernel<BroadcastGradientArgsOp>(r, "BroadcastGradientArgs");
}

}  // namespace distflow
