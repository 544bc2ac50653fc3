// Update kernels of gradient descent, momentum and Adagrad (dense and sparse).
#include "kernels/training_kernels.h"

namespace distflow {
namespace {

// var -= alpha * delta
struct GradientDescentUpdate {
  static constexpr int kNumVars = 1;
  static constexpr int kCost = 2;
  explicit GradientDescentUpdate(OpKernelConstruction*) {}
  template <typename T>
  void operator()(const T* s, T* const* vars, const T* grad, int64_t n) const {
    FlatMap<T>(vars[0], n) -= s[0] * ConstFlatMap<T>(grad, n);
  }
};

// Scalars: lr, momentum.
struct MomentumUpdate {
  static constexpr int kNumVars = 2;
  static constexpr int kCost = 5;
  explicit MomentumUpdate(OpKernelConstruction* ctx) {
    ctx->SetStatus(ctx->GetAttr("use_nesterov", &use_nesterov));
  }
  template <typename T>
  void operator()(const T* s, T* const* vars, const T* grad, int64_t n) const {
    const T lr = s[0], momentum = s[1];
    FlatMap<T> var(vars[0], n), accum(vars[1], n);
    ConstFlatMap<T> g(grad, n);
    accum = accum * momentum + g;
    if (use_nesterov) {
      var -= g * lr + accum * (momentum * lr);
    } else {
      var -= accum * lr;
    }
  }
  bool use_nesterov = false;
};

// Scalars: lr.
struct AdagradUpdate {
  static constexpr int kNumVars = 2;
  static constexpr int kCost = 10;
  explicit AdagradUpdate(OpKernelConstruction*) {}
  template <typename T>
  void operator()(const T* s, T* const* vars, const T* grad, int64_t n) const {
    FlatMap<T> var(vars[0], n), accum(vars[1], n);
    ConstFlatMap<T> g(grad, n);
    accum += g.square();
    var -= g * s[0] * accum.rsqrt();
  }
};

}  // namespace

void RegisterFirstOrderTrainingKernels(KernelRegistry* r) {
  RegisterUpdateKernels<GradientDescentUpdate>(
      r, "ResourceApplyGradientDescent", "ResourceSparseApplyGradientDescent");
  RegisterUpdateKernels<MomentumUpdate>(r, "ResourceApplyMomentum",
                                        "ResourceSparseApplyMomentum");
  RegisterUpdateKernels<AdagradUpdate>(r, "ResourceApplyAdagrad",
                                       "ResourceSparseApplyAdagrad");
}

}  // namespace distflow
