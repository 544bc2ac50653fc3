// Op constructors for constants, placeholders, shapes and reshaping.
// Each adds a node to the scope's graph and returns its output(s); errors are
// recorded in the scope (see distflow/scope.h).
#ifndef DISTFLOW_OPS_ARRAY_OPS_H_
#define DISTFLOW_OPS_ARRAY_OPS_H_

#include <string>
#include <vector>

#include "distflow/scope.h"
#include "distflow/tensor.h"
#include "distflow/tensor_shape.h"
#include "distflow/types.h"

namespace distflow {
namespace ops {

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
// Zeros (ones) of the shape and type of `x`.
Output ZerosLike(const Scope& scope, const Input& x);
Output OnesLike(const Scope& scope, const Input& x);
Output Zeros(const Scope& scope, const TensorShape& shape,
             DataType dtype = DataType::kFloat);
Output Ones(const Scope& scope, const TensorShape& shape,
            DataType dtype = DataType::kFloat);

}  // namespace ops
}  // namespace distflow

#endif  // DISTFLOW_OPS_ARRAY_OPS_H_
