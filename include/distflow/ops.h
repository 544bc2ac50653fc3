// Op constructors: each adds a node to the scope's graph and returns its
// output(s).
//
// Errors (such as MatMul of [1,4] by [3,1]) are recorded in the scope; see
// distflow/scope.h.
#ifndef DISTFLOW_OPS_H_
#define DISTFLOW_OPS_H_

#include <string>
#include <vector>

#include "distflow/scope.h"
#include "distflow/tensor.h"
#include "distflow/tensor_shape.h"
#include "distflow/types.h"

namespace distflow {
namespace ops {

// ---- Constants, placeholders and shapes ----

// A constant holding `value` (a Tensor or a literal such as 3.0f or {{1, 2},
// {3, 4}}).
Output Const(const Scope& scope, const Input& value);
// A value fed at run time. `shape` may be partly unknown ({-1, 784}); the fed
// tensor must match.
Output Placeholder(const Scope& scope, DataType dtype,
                   const PartialTensorShape& shape = PartialTensorShape());
Output Identity(const Scope& scope, const Input& input);
// Does nothing; with control dependencies, groups them into one target.
Operation NoOp(const Scope& scope);
// An op that runs after every op of `ops`: run it to run them all.
Operation Group(const Scope& scope, const std::vector<Operation>& ops);
// The shape of `input` as a vector of `out_type` (int32 or int64).
Output Shape(const Scope& scope, const Input& input,
             DataType out_type = DataType::kInt32);
// `input` with shape `shape` (an int32 or int64 vector; one entry may be -1,
// inferred).
Output Reshape(const Scope& scope, const Input& input, const Input& shape);
// A tensor of shape `dims` (a vector) filled with scalar `value`.
Output Fill(const Scope& scope, const Input& dims, const Input& value);
Output Zeros(const Scope& scope, const TensorShape& shape,
             DataType dtype = DataType::kFloat);
Output Ones(const Scope& scope, const TensorShape& shape,
            DataType dtype = DataType::kFloat);

// ---- Math (elementwise ops broadcast numpy-style) ----

Output Add(const Scope& scope, const Input& x, const Input& y);
Output Sub(const Scope& scope, const Input& x, const Input& y);
Output Mul(const Scope& scope, const Input& x, const Input& y);

struct MatMulOptions {
  bool transpose_a = false;
  bool transpose_b = false;
};
// The matrix product of `a` [m,k] and `b` [k,n] (after the optional
// transposes).
Output MatMul(const Scope& scope, const Input& a, const Input& b,
              const MatMulOptions& options = MatMulOptions());

// ---- Variables ----

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
  Variable(const Scope& scope, const Input& initial_value);
  // A variable of `dtype` and `shape` with no initializer (assign it before
  // reading).
  Variable(const Scope& scope, DataType dtype, const PartialTensorShape& shape);
  Variable() = default;

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

// Assigns `value` to `var`; returns the new value. The shape and dtype must
// match the variable's.
Output Assign(const Scope& scope, const Variable& var, const Input& value);
Output AssignAdd(const Scope& scope, const Variable& var, const Input& delta);
Output AssignSub(const Scope& scope, const Variable& var, const Input& delta);
// A scalar bool: true once `var` has a value.
Output IsVariableInitialized(const Scope& scope, const Variable& var);
// One op that runs every variable initializer created so far in the scope's
// graph.
Operation GlobalVariablesInitializer(const Scope& scope);

}  // namespace ops
}  // namespace distflow

#endif  // DISTFLOW_OPS_H_
