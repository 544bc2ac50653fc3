// Op constructors for optimizer updates: each updates a variable (and its
// slots, such as Adam's moments) in place, where the variable lives, following
// TensorFlow's ResourceApply* ops. Most programs use the optimizers of
// distflow/train/optimizer.h, which build these ops.
//
// `var` and the slots are variable handles (Variable::handle()), all of the
// variable's dtype (float32 or float64) and shape; hyperparameters (lr,
// momentum, ...) are scalars; number literals take the gradient's type. The
// op is colocated with `var`. The ops have no outputs: run the returned
// Operation as a target. A run fails with FAILED_PRECONDITION naming the
// variable if it or a slot is uninitialized, and with INVALID_ARGUMENT naming
// the variable and both shapes if a shape does not fit.
//
// The update locks every variable it touches for its whole duration
// (TensorFlow's use_locking=true), so concurrent updates of one variable from
// several workers are serialized.
//
// Sparse forms (ResourceSparseApply*) update only the rows listed in
// `indices` (an int32 or int64 vector [n]) with the gradient rows `grad` [n,
// var.shape[1:]...]. A row listed several times receives the sum of its
// gradient rows, applied once, which is what the dense update of the summed
// gradient would do to that row. An index outside [0, rows) is
// INVALID_ARGUMENT naming the index and the variable's row count.
#ifndef DISTFLOW_OPS_TRAINING_OPS_H_
#define DISTFLOW_OPS_TRAINING_OPS_H_

#include "distflow/scope.h"

namespace distflow {
namespace ops {

// var -= alpha * delta
Operation ResourceApplyGradientDescent(const Scope& scope, const Output& var,
                                       const Input& alpha, const Input& delta);

// accum = accum * momentum + grad;
// var -= lr * accum, or with Nesterov momentum
// var -= lr * grad + lr * momentum * accum.
Operation ResourceApplyMomentum(const Scope& scope, const Output& var,
                                const Output& accum, const Input& lr,
                                const Input& grad, const Input& momentum,
                                bool use_nesterov = false);

// accum += grad^2; var -= lr * grad / sqrt(accum)
Operation ResourceApplyAdagrad(const Scope& scope, const Output& var,
                               const Output& accum, const Input& lr,
                               const Input& grad);

// lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power);
// m = beta1 * m + (1 - beta1) * grad; v = beta2 * v + (1 - beta2) * grad^2;
// var -= lr_t * m / (sqrt(v) + epsilon)
Operation ResourceApplyAdam(const Scope& scope, const Output& var,
                            const Output& m, const Output& v,
                            const Input& beta1_power, const Input& beta2_power,
                            const Input& lr, const Input& beta1,
                            const Input& beta2, const Input& epsilon,
                            const Input& grad);

// ms = rho * ms + (1 - rho) * grad^2;
// mom = momentum * mom + lr * grad / sqrt(ms + epsilon); var -= mom
Operation ResourceApplyRMSProp(const Scope& scope, const Output& var,
                               const Output& ms, const Output& mom,
                               const Input& lr, const Input& rho,
                               const Input& momentum, const Input& epsilon,
                               const Input& grad);

// Follow-the-regularized-leader (McMahan et al., 2013), lr_power <= 0:
// new_accum = accum + grad^2;
// linear += grad - (new_accum^-lr_power - accum^-lr_power) / lr * var;
// quadratic = new_accum^-lr_power / lr + 2 * l2;
// var = |linear| > l1 ? (sign(linear) * l1 - linear) / quadratic : 0;
// accum = new_accum
Operation ResourceApplyFtrl(const Scope& scope, const Output& var,
                            const Output& accum, const Output& linear,
                            const Input& grad, const Input& lr, const Input& l1,
                            const Input& l2, const Input& lr_power);

// The sparse forms: the same updates applied to the listed rows only. Adam's
// is "lazy": only the listed rows of m and v decay.
Operation ResourceSparseApplyGradientDescent(const Scope& scope,
                                             const Output& var,
                                             const Input& alpha,
                                             const Input& grad,
                                             const Input& indices);
Operation ResourceSparseApplyMomentum(const Scope& scope, const Output& var,
                                      const Output& accum, const Input& lr,
                                      const Input& grad, const Input& indices,
                                      const Input& momentum,
                                      bool use_nesterov = false);
Operation ResourceSparseApplyAdagrad(const Scope& scope, const Output& var,
                                     const Output& accum, const Input& lr,
                                     const Input& grad, const Input& indices);
Operation ResourceSparseApplyAdam(const Scope& scope, const Output& var,
                                  const Output& m, const Output& v,
                                  const Input& beta1_power,
                                  const Input& beta2_power, const Input& lr,
                                  const Input& beta1, const Input& beta2,
                                  const Input& epsilon, const Input& grad,
                                  const Input& indices);
Operation ResourceSparseApplyRMSProp(const Scope& scope, const Output& var,
                                     const Output& ms, const Output& mom,
                                     const Input& lr, const Input& rho,
                                     const Input& momentum,
                                     const Input& epsilon, const Input& grad,
                                     const Input& indices);
Operation ResourceSparseApplyFtrl(const Scope& scope, const Output& var,
                                  const Output& accum, const Output& linear,
                                  const Input& grad, const Input& indices,
                                  const Input& lr, const Input& l1,
                                  const Input& l2, const Input& lr_power);

}  // namespace ops
}  // namespace distflow

#endif  // DISTFLOW_OPS_TRAINING_OPS_H_
