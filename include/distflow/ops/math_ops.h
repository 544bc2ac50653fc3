// Op constructors for math: elementwise ops (numpy-style broadcasting), casts,
// reductions, bias addition and matrix products.
// Each adds a node to the scope's graph and returns its output(s); errors are
// recorded in the scope (see distflow/scope.h).
#ifndef DISTFLOW_OPS_MATH_OPS_H_
#define DISTFLOW_OPS_MATH_OPS_H_

#include <string>
#include <vector>

#include "distflow/scope.h"
#include "distflow/tensor.h"
#include "distflow/tensor_shape.h"
#include "distflow/types.h"

namespace distflow {
namespace ops {

// ---- Elementwise binary ops ----
// Both inputs have one numeric type (number literals adapt to the other
// input's type); the output has the numpy broadcast of their shapes.
Output Add(const Scope& scope, const Input& x, const Input& y);
Output Sub(const Scope& scope, const Input& x, const Input& y);
Output Mul(const Scope& scope, const Input& x, const Input& y);
// x / y: true division for floats; for integers, C++ division (the quotient
// truncated toward zero), and a zero divisor fails the step with
// INVALID_ARGUMENT.
Output Div(const Scope& scope, const Input& x, const Input& y);
// x to the power y; for integers a negative exponent fails the step with
// INVALID_ARGUMENT.
Output Pow(const Scope& scope, const Input& x, const Input& y);
Output Maximum(const Scope& scope, const Input& x, const Input& y);
Output Minimum(const Scope& scope, const Input& x, const Input& y);
// (x - y)^2.
Output SquaredDifference(const Scope& scope, const Input& x, const Input& y);

// Comparisons: a bool tensor of the broadcast shape. Equal and NotEqual also
// take bool inputs.
Output Equal(const Scope& scope, const Input& x, const Input& y);
Output NotEqual(const Scope& scope, const Input& x, const Input& y);
Output Less(const Scope& scope, const Input& x, const Input& y);
Output LessEqual(const Scope& scope, const Input& x, const Input& y);
Output Greater(const Scope& scope, const Input& x, const Input& y);
Output GreaterEqual(const Scope& scope, const Input& x, const Input& y);

// Logical ops on bool tensors (broadcasting).
Output LogicalAnd(const Scope& scope, const Input& x, const Input& y);
Output LogicalOr(const Scope& scope, const Input& x, const Input& y);
Output LogicalNot(const Scope& scope, const Input& x);

// Elementwise cond ? t : e; `cond` (bool), `t` and `e` broadcast together.
Output Select(const Scope& scope, const Input& cond, const Input& t,
              const Input& e);

// For the gradient of a broadcasting op whose inputs have shapes s0 and s1
// (int32 or int64 vectors): the axes of the broadcast shape that each input's
// gradient must be summed over (then reshaped to the input's shape).
struct BroadcastGradientArgsOutput {
  Output r0;
  Output r1;
};
BroadcastGradientArgsOutput BroadcastGradientArgs(const Scope& scope,
                                                  const Input& s0,
                                                  const Input& s1);

// ---- Elementwise unary ops ----
// Neg, Square, Abs and Sign take any numeric type (unsigned values wrap);
// the others take float32 or float64.
Output Neg(const Scope& scope, const Input& x);
Output Exp(const Scope& scope, const Input& x);
Output Log(const Scope& scope, const Input& x);
Output Sqrt(const Scope& scope, const Input& x);
// 1 / sqrt(x).
Output Rsqrt(const Scope& scope, const Input& x);
Output Square(const Scope& scope, const Input& x);
// 1 / x.
Output Reciprocal(const Scope& scope, const Input& x);
Output Abs(const Scope& scope, const Input& x);
// -1, 0 or 1.
Output Sign(const Scope& scope, const Input& x);
Output Floor(const Scope& scope, const Input& x);

// `x` converted to `dtype` (numeric types and bool). Floats to integers
// truncate toward zero; to bool, nonzero is true; from bool, true is 1.
Output Cast(const Scope& scope, const Input& x, DataType dtype);

// ---- Reductions ----
struct ReduceOptions {
  // Keep each reduced dimension with size 1.
  bool keep_dims = false;
};
// Reduce `input` over `axes`: an int32 or int64 scalar or vector (negative
// axes count from the end; an empty vector reduces nothing; duplicates are an
// error). Mean of integers divides with truncation. Over empty axes, Sum gives
// 0, Prod 1, Max the lowest value, Min the highest.
Output Sum(const Scope& scope, const Input& input, const Input& axes,
           const ReduceOptions& options = ReduceOptions());
Output Mean(const Scope& scope, const Input& input, const Input& axes,
            const ReduceOptions& options = ReduceOptions());
Output Max(const Scope& scope, const Input& input, const Input& axes,
           const ReduceOptions& options = ReduceOptions());
Output Min(const Scope& scope, const Input& input, const Input& axes,
           const ReduceOptions& options = ReduceOptions());
Output Prod(const Scope& scope, const Input& input, const Input& axes,
            const ReduceOptions& options = ReduceOptions());
// The int64 index of the largest (smallest) element along `axis` (an int32 or
// int64 scalar, may be negative); ties pick the first.
Output ArgMax(const Scope& scope, const Input& input, const Input& axis);
Output ArgMin(const Scope& scope, const Input& input, const Input& axis);

// ---- Bias ----
// value [..., C] + bias [C].
Output BiasAdd(const Scope& scope, const Input& value, const Input& bias);
// The gradient of BiasAdd's bias: `out_backprop` [..., C] summed to [C].
Output BiasAddGrad(const Scope& scope, const Input& out_backprop);

// ---- Matrix products ----
struct MatMulOptions {
  bool transpose_a = false;
  bool transpose_b = false;
};
// The matrix product of `a` [m,k] and `b` [k,n] (after the optional
// transposes).
Output MatMul(const Scope& scope, const Input& a, const Input& b,
              const MatMulOptions& options = MatMulOptions());

}  // namespace ops
}  // namespace distflow

#endif  // DISTFLOW_OPS_MATH_OPS_H_
