// The standard optimizers, with TensorFlow 1.x's defaults and update rules
// (the exact formulas are in distflow/ops/training_ops.h).
//
// The learning rate is an Input: a number, or a scalar Output of the
// variables' type computed each step, such as a schedule from
// distflow/train/learning_rate.h. Other hyperparameters are numbers.
#ifndef DISTFLOW_TRAIN_OPTIMIZERS_H_
#define DISTFLOW_TRAIN_OPTIMIZERS_H_

#include <string>
#include <vector>

#include "distflow/scope.h"
#include "distflow/train/optimizer.h"

namespace distflow {
namespace train {

// var -= learning_rate * grad. No slots.
class GradientDescentOptimizer : public Optimizer {
 public:
  explicit GradientDescentOptimizer(const Input& learning_rate,
                                    std::string name = "GradientDescent");

 protected:
  Operation ApplyDense(const Scope& scope, const Output& grad,
                       const ops::Variable& var) override;
  Operation ApplySparse(const Scope& scope, const IndexedSlices& grad,
                        const ops::Variable& var) override;

 private:
  const Input learning_rate_;
};

// Momentum (optionally Nesterov's). Slot "momentum" ("<var>/Momentum"),
// starting at zero.
class MomentumOptimizer : public Optimizer {
 public:
  MomentumOptimizer(const Input& learning_rate, double momentum,
                    bool use_nesterov = false, std::string name = "Momentum");
  std::vector<std::string> GetSlotNames() const override {
    return {"momentum"};
  }

 protected:
  absl::Status CreateSlots(const Scope& scope,
                           const std::vector<ops::Variable>& vars) override;
  Operation ApplyDense(const Scope& scope, const Output& grad,
                       const ops::Variable& var) override;
  Operation ApplySparse(const Scope& scope, const IndexedSlices& grad,
                        const ops::Variable& var) override;

 private:
  const Input learning_rate_;
  const double momentum_;
  const bool use_nesterov_;
};

// Adagrad. Slot "accumulator" ("<var>/Adagrad"), starting at
// initial_accumulator_value (> 0, so that the first step divides by a
// positive number).
class AdagradOptimizer : public Optimizer {
 public:
  explicit AdagradOptimizer(const Input& learning_rate,
                            double initial_accumulator_value = 0.1,
                            std::string name = "Adagrad");
  std::vector<std::string> GetSlotNames() const override {
    return {"accumulator"};
  }

 protected:
  absl::Status CreateSlots(const Scope& scope,
                           const std::vector<ops::Variable>& vars) override;
  Operation ApplyDense(const Scope& scope, const Output& grad,
                       const ops::Variable& var) override;
  Operation ApplySparse(const Scope& scope, const IndexedSlices& grad,
                        const ops::Variable& var) override;

 private:
  const Input learning_rate_;
  const double initial_accumulator_value_;
};

// Adam (Kingma and Ba, 2015). Slots "m" ("<var>/Adam") and "v"
// ("<var>/Adam_1"), starting at zero; the bias corrections use the variables
// "beta1_power" and "beta2_power" (colocated with the first variable), which
// are multiplied by beta1 and beta2 after each step. Sparse gradients update
// m and v lazily: only the rows they touch.
class AdamOptimizer : public Optimizer {
 public:
  explicit AdamOptimizer(const Input& learning_rate = 0.001, double beta1 = 0.9,
                         double beta2 = 0.999, double epsilon = 1e-8,
                         std::string name = "Adam");
  std::vector<std::string> GetSlotNames() const override { return {"m", "v"}; }

  // The beta power variables; invalid before ApplyGradients.
  const ops::Variable& beta1_power() const { return beta1_power_; }
  const ops::Variable& beta2_power() const { return beta2_power_; }

 protected:
  absl::Status CreateSlots(const Scope& scope,
                           const std::vector<ops::Variable>& vars) override;
  Operation ApplyDense(const Scope& scope, const Output& grad,
                       const ops::Variable& var) override;
  Operation ApplySparse(const Scope& scope, const IndexedSlices& grad,
                        const ops::Variable& var) override;
  Operation Finish(const Scope& scope,
                   const std::vector<Operation>& updates) override;

 private:
  const Input learning_rate_;
  const double beta1_, beta2_, epsilon_;
  ops::Variable beta1_power_, beta2_power_;
};

// RMSProp (Hinton's lecture 6e). Slots "rms" ("<var>/RMSProp", starting at
// one, as in TensorFlow 1.x) and "momentum" ("<var>/RMSProp_1", starting at
// zero).
class RMSPropOptimizer : public Optimizer {
 public:
  explicit RMSPropOptimizer(const Input& learning_rate, double decay = 0.9,
                            double momentum = 0.0, double epsilon = 1e-10,
                            std::string name = "RMSProp");
  std::vector<std::string> GetSlotNames() const override {
    return {"rms", "momentum"};
  }

 protected:
  absl::Status CreateSlots(const Scope& scope,
                           const std::vector<ops::Variable>& vars) override;
  Operation ApplyDense(const Scope& scope, const Output& grad,
                       const ops::Variable& var) override;
  Operation ApplySparse(const Scope& scope, const IndexedSlices& grad,
                        const ops::Variable& var) override;

 private:
  const Input learning_rate_;
  const double decay_, momentum_, epsilon_;
};

// FTRL-proximal (McMahan et al., 2013). Slots "accum" ("<var>/Ftrl", starting
// at initial_accumulator_value) and "linear" ("<var>/Ftrl_1", starting at
// zero). learning_rate_power must be <= 0; l1 and l2 >= 0.
class FtrlOptimizer : public Optimizer {
 public:
  explicit FtrlOptimizer(const Input& learning_rate,
                         double learning_rate_power = -0.5,
                         double initial_accumulator_value = 0.1,
                         double l1_regularization_strength = 0.0,
                         double l2_regularization_strength = 0.0,
                         std::string name = "Ftrl");
  std::vector<std::string> GetSlotNames() const override {
    return {"accum", "linear"};
  }

 protected:
  absl::Status CreateSlots(const Scope& scope,
                           const std::vector<ops::Variable>& vars) override;
  Operation ApplyDense(const Scope& scope, const Output& grad,
                       const ops::Variable& var) override;
  Operation ApplySparse(const Scope& scope, const IndexedSlices& grad,
                        const ops::Variable& var) override;

 private:
  const Input learning_rate_;
  const double lr_power_, initial_accumulator_value_, l1_, l2_;
};

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_OPTIMIZERS_H_
