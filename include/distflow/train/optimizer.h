// Optimizers: building the ops that train variables from the gradient of a
// loss.
//
//   train::AdamOptimizer adam(/*learning_rate=*/0.001);
//   auto global_step = train::GetOrCreateGlobalStep(scope);
//   Operation train_op = adam.Minimize(scope, loss, global_step).value();
//   ... session->RunTargets({ops::GlobalVariablesInitializer(scope)});
//   ... session->RunTargets({train_op});   // one training step
//
// An optimizer only builds graph ops; the session runs them. Each variable is
// updated by one op colocated with it (on its ps task in a cluster), so the
// gradient travels to the variable, never the variable to the gradient.
// State an optimizer keeps per variable (Adam's moments, Adagrad's
// accumulator) lives in *slot* variables beside it, named "<var>/<Name>",
// "<var>/<Name>_1", ...; slots are not trainable and are initialized by
// ops::GlobalVariablesInitializer like every variable. Build the optimizer's
// ops before creating that initializer.
//
// An Optimizer object builds into one graph; it is not thread-safe (graph
// building is single-threaded).
#ifndef DISTFLOW_TRAIN_OPTIMIZER_H_
#define DISTFLOW_TRAIN_OPTIMIZER_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distflow/gradients.h"
#include "distflow/ops/state_ops.h"
#include "distflow/scope.h"

namespace distflow {

class Graph;

namespace train {

// A gradient and the variable it belongs to.
using GradAndVar = std::pair<Gradient, ops::Variable>;

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // "GradientDescent", "Adam", ...: the name scope of its ops and the suffix
  // of its slots' names.
  const std::string& name() const { return name_; }

  // Adds the ops computing the gradient of `loss` with respect to each
  // variable of `var_list` (default: every trainable variable of the graph).
  // A variable that `loss` does not depend on gets a Gradient without value.
  // Errors: INVALID_ARGUMENT for an empty list or a loss that is not a float
  // scalar-valued output; the gradient builder's error (naming the op without
  // a gradient) otherwise.
  absl::StatusOr<std::vector<GradAndVar>> ComputeGradients(
      const Scope& scope, const Output& loss,
      const std::vector<ops::Variable>& var_list = {});

  // Adds one op that applies every gradient to its variable and then, if
  // `global_step` is valid, increments it by one. Pairs without a gradient
  // are skipped; sparse gradients update only their rows. The returned op is
  // named "train_op" unless the scope names it (scope.WithOpName).
  // INVALID_ARGUMENT if no pair has a gradient (naming the variables), or if
  // a variable's shape is not fully defined (slots need it); the scope's
  // first error if building failed.
  absl::StatusOr<Operation> ApplyGradients(
      const Scope& scope, const std::vector<GradAndVar>& grads_and_vars,
      const ops::Variable& global_step = ops::Variable());

  // ComputeGradients, then ApplyGradients.
  absl::StatusOr<Operation> Minimize(
      const Scope& scope, const Output& loss,
      const ops::Variable& global_step = ops::Variable(),
      const std::vector<ops::Variable>& var_list = {});

  // The slot `slot_name` of `var` (such as Adam's "m" and "v"); an invalid
  // Variable if ApplyGradients has not created it.
  ops::Variable GetSlot(const ops::Variable& var,
                        const std::string& slot_name) const;
  // The names of the slots this optimizer keeps per variable.
  virtual std::vector<std::string> GetSlotNames() const { return {}; }

 protected:
  explicit Optimizer(std::string name) : name_(std::move(name)) {}

  // Creates what the updates need before any is built: the slots of every
  // variable (with GetOrCreateSlot) and other state, such as Adam's beta
  // powers. `scope` has no control dependencies. May be called again with
  // variables that already have their state.
  virtual absl::Status CreateSlots(const Scope& scope,
                                   const std::vector<ops::Variable>& vars) {
    return absl::OkStatus();
  }
  // The update of `var` by a dense or sparse gradient, built in `scope`
  // (colocated with the variable). Errors go to the scope.
  virtual Operation ApplyDense(const Scope& scope, const Output& grad,
                               const ops::Variable& var) = 0;
  virtual Operation ApplySparse(const Scope& scope, const IndexedSlices& grad,
                                const ops::Variable& var) = 0;
  // The op that completes a step once every update in `updates` has run;
  // groups them by default. Adam advances its beta powers here.
  virtual Operation Finish(const Scope& scope,
                           const std::vector<Operation>& updates);

  // The slot `slot_name` of `var`, created on first use as a non-trainable
  // variable named "<var>/<op_name>", colocated with `var`, of its dtype and
  // shape, filled with `initial_value`. INVALID_ARGUMENT naming the variable
  // if its shape is not fully defined.
  absl::StatusOr<ops::Variable> GetOrCreateSlot(const Scope& scope,
                                                const ops::Variable& var,
                                                const std::string& slot_name,
                                                const std::string& op_name,
                                                double initial_value);

 private:
  // Forgets the slots of another graph when this optimizer starts building
  // into a new one.
  void UseGraph(const Scope& scope);

  const std::string name_;
  const Graph* graph_ = nullptr;
  // var name -> slot name -> slot.
  std::map<std::string, std::map<std::string, ops::Variable>> slots_;
};

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_OPTIMIZER_H_
