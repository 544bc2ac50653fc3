// Op constructors for variables: state that keeps its value across steps.
// Each adds a node to the scope's graph and returns its output(s); errors are
// recorded in the scope (see distflow/scope.h).
#ifndef DISTFLOW_OPS_STATE_OPS_H_
#define DISTFLOW_OPS_STATE_OPS_H_

#include <string>
#include <vector>

#include "distflow/scope.h"
#include "distflow/tensor.h"
#include "distflow/tensor_shape.h"
#include "distflow/types.h"

namespace distflow {
namespace ops {

// How a variable takes part in training.
struct VariableOptions {
  // Trainable variables join the trainable variables collection, the ones an
  // optimizer updates when given no explicit list. Counters (such as the
  // global step) and an optimizer's slots are not trainable.
  bool trainable = true;
};

// A variable: state that lives on one device and keeps its value across steps.
// A Variable is an Output (its current value, read when a step needs it), so it
// can be passed to any op.
//
// It starts uninitialized: run GlobalVariablesInitializer(scope) (or
// initializer()) once before reading it, or the read fails with
// FAILED_PRECONDITION naming the variable.
class Variable : public Output {
 public:
  // A variable whose initial value is `initial_value` (a Tensor, a literal or
  // an Output, such as Zeros(...)); its dtype and shape are those of the
  // initial value.
  Variable(const Scope& scope, const Input& initial_value,
           const VariableOptions& options = VariableOptions());
  // A variable of `dtype` and `shape` with no initializer (assign it before
  // reading).
  Variable(const Scope& scope, DataType dtype, const PartialTensorShape& shape,
           const VariableOptions& options = VariableOptions());
  Variable() = default;

  // The variable made by the constructors above whose handle is `handle` (the
  // output of its VarHandleOp), with its read value and initializer; an
  // invalid Variable if `handle` is not such an output.
  static Variable FromHandle(const Output& handle);

  // The handle the assign and read ops use.
  const Output& handle() const { return handle_; }
  // Assigns the initial value; invalid for variables made without one.
  const Operation& initializer() const { return initializer_; }
  // The name of the variable (its handle's node name).
  std::string var_name() const { return handle_.op().name(); }

 private:
  Output handle_;
  Operation initializer_;
};

// The variables created so far in the scope's graph, in creation order: all
// of them, or the trainable ones.
std::vector<Variable> GlobalVariables(const Scope& scope);
std::vector<Variable> TrainableVariables(const Scope& scope);

// Assigns `value` to `var`; returns the new value. The shape and dtype must
// match the variable's.
Output Assign(const Scope& scope, const Variable& var, const Input& value);
Output AssignAdd(const Scope& scope, const Variable& var, const Input& delta);
Output AssignSub(const Scope& scope, const Variable& var, const Input& delta);
// A scalar bool: true once `var` has a value.
Output IsVariableInitialized(const Scope& scope, const Variable& var);
// A string vector: the names (var_name()) of the variables of `vars` that
// are not initialized yet, in the order given; empty once all are. Each check
// runs beside its variable, so this works for variables on ps tasks. The
// monitored session's ready op.
Output ReportUninitializedVariables(const Scope& scope,
                                    const std::vector<Variable>& vars);
// One op that runs every variable initializer created so far in the scope's
// graph.
Operation GlobalVariablesInitializer(const Scope& scope);

}  // namespace ops
}  // namespace distflow

#endif  // DISTFLOW_OPS_STATE_OPS_H_
