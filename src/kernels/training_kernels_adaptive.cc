// Update kernels of Adam, RMSProp and FTRL (dense and sparse).
#include <cmath>

#include "kernels/training_kernels.h"

namespace distflow {
namespace {

// Scalars: beta1_power, beta2_power, lr, beta1, beta2, epsilon. The bias
// corrections fold into the step size, so epsilon is added to the raw sqrt(v)
// as in TensorFlow (Kingma and Ba, section 2, last paragraph).
struct AdamUpdate {
  static constexpr int kNumVars = 3;
  static constexpr int kCost = 20;
  explicit AdamUpdate(OpKernelConstruction*) {}
  template <typename T>
  void operator()(const T* s, T* const* vars, const T* grad, int64_t n) const {
    const T beta1_power = s[0], beta2_power = s[1], lr = s[2], beta1 = s[3],
            beta2 = s[4], epsilon = s[5];
    const T step = lr * std::sqrt(T(1) - beta2_power) / (T(1) - beta1_power);
    FlatMap<T> var(vars[0], n), m(vars[1], n), v(vars[2], n);
    ConstFlatMap<T> g(grad, n);
    m += (g - m) * (T(1) - beta1);
    v += (g.square() - v) * (T(1) - beta2);
    var -= (m * step) / (v.sqrt() + epsilon);
  }
};

// Scalars: lr, rho, momentum, epsilon.
struct RMSPropUpdate {
  static constexpr int kNumVars = 3;
  static constexpr int kCost = 20;
  explicit RMSPropUpdate(OpKernelConstruction*) {}
  template <typename T>
  void operator()(const T* s, T* const* vars, const T* grad, int64_t n) const {
    const T lr = s[0], rho = s[1], momentum = s[2], epsilon = s[3];
    FlatMap<T> var(vars[0], n), ms(vars[1], n), mom(vars[2], n);
    ConstFlatMap<T> g(grad, n);
    ms += (g.square() - ms) * (T(1) - rho);
    mom = mom * momentum + (g * lr) / (ms + epsilon).sqrt();
    var -= mom;
  }
};

// Scalars: lr, l1, l2, lr_power.
struct FtrlUpdate {
  static constexpr int kNumVars = 3;
  static constexpr int kCost = 60;
  explicit FtrlUpdate(OpKernelConstruction*) {}
  template <typename T>
  void operator()(const T* s, T* const* vars, const T* grad, int64_t n) const {
    const T lr = s[0], l1 = s[1], l2 = s[2], lr_power = s[3];
    FlatMap<T> var(vars[0], n), accum(vars[1], n), linear(vars[2], n);
    ConstFlatMap<T> g(grad, n);
    using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
    const Array new_accum = accum + g.square();
    // The common lr_power = -1/2 takes square roots, far cheaper than pow.
    const bool sqrt_power = lr_power == T(-0.5);
    // std::pow per element: Eigen's vectorized pow trips GCC 12's
    // uninitialized-value warning inside the AVX-512 intrinsics.
    auto power = [&](const Array& x) -> Array {
      if (sqrt_power) return x.sqrt();
      return x.unaryExpr([&](T e) { return std::pow(e, -lr_power); });
    };
    const Array new_pow = power(new_accum);
    const Array old_pow = power(accum);
    linear += g - (new_pow - old_pow) / lr * var;
    var =
        (linear.abs() > l1)
            .select((linear.sign() * l1 - linear) / (new_pow / lr + T(2) * l2),
                    T(0));
    accum = new_accum;
  }
};

}  // namespace

void RegisterAdaptiveTrainingKernels(KernelRegistry* r) {
  RegisterUpdateKernels<AdamUpdate>(r, "ResourceApplyAdam",
                                    "ResourceSparseApplyAdam");
  RegisterUpdateKernels<RMSPropUpdate>(r, "ResourceApplyRMSProp",
                                       "ResourceSparseApplyRMSProp");
  RegisterUpdateKernels<FtrlUpdate>(r, "ResourceApplyFtrl",
                                    "ResourceSparseApplyFtrl");
}

}  // namespace distflow
