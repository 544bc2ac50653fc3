// Op constructors for math: elementwise ops (numpy-style broadcasting) and
// matrix products.
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

}  // namespace ops
}  // namespace distflow

#endif  // DISTFLOW_OPS_MATH_OPS_H_
