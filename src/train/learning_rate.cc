#include "distflow/train/learning_rate.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "distflow/ops.h"
#include "distflow/tensor.h"

namespace distflow {
namespace train {
namespace {

Tensor ScalarOf(DataType dtype, double value) {
  return dtype == DataType::kDouble
             ? Tensor::Scalar<double>(value)
             : Tensor::Scalar<float>(static_cast<float>(value));
}

// `x` as a `dtype` Output: numbers become constants of that type; Outputs of
// another type are cast.
Output As(const Scope& scope, const Input& x, DataType dtype) {
  if (!x.is_output()) {
    const Tensor& t = x.tensor();
    if (t.dtype() == dtype) return ops::Const(scope, t);
    return ops::Cast(scope, ops::Const(scope, t), dtype);
  }
  if (x.output().dtype() == dtype) return x.output();
  return ops::Cast(scope, x.output(), dtype);
}

bool CheckDtype(const Scope& scope, const char* what, DataType dtype) {
  if (dtype == DataType::kFloat || dtype == DataType::kDouble) return true;
  scope.UpdateStatus(absl::InvalidArgumentError(absl::StrCat(
      what, ": dtype must be float32 or float64, got ", DataTypeName(dtype))));
  return false;
}

}  // namespace

Output ExponentialDecay(const Scope& scope, const Input& learning_rate,
                        const Output& global_step, int64_t decay_steps,
                        double decay_rate, bool staircase, DataType dtype) {
  if (!CheckDtype(scope, "ExponentialDecay", dtype)) return Output();
  if (decay_steps <= 0 || !global_step.valid()) {
    scope.UpdateStatus(absl::InvalidArgumentError(
        absl::StrCat("ExponentialDecay: needs decay_steps > 0 (got ",
                     decay_steps, ") and a valid global step")));
    return Output();
  }
  Scope s = scope.NewSubScope("ExponentialDecay");
  Output p = ops::Div(s, As(s, global_step, dtype),
                      ops::Const(s, ScalarOf(dtype, decay_steps)));
  if (staircase) p = ops::Floor(s, p);
  return ops::Mul(s.WithOpName("learning_rate"), As(s, learning_rate, dtype),
                  ops::Pow(s, ops::Const(s, ScalarOf(dtype, decay_rate)), p));
}

Output PiecewiseConstant(const Scope& scope, const Output& global_step,
                         const std::vector<int64_t>& boundaries,
                         const std::vector<double>& values, DataType dtype) {
  if (!CheckDtype(scope, "PiecewiseConstant", dtype)) return Output();
  bool increasing = true;
  for (size_t i = 1; i < boundaries.size(); ++i) {
    increasing = increasing && boundaries[i - 1] < boundaries[i];
  }
  if (values.size() != boundaries.size() + 1 || !increasing ||
      !global_step.valid()) {
    scope.UpdateStatus(absl::InvalidArgumentError(absl::StrCat(
        "PiecewiseConstant: needs strictly increasing boundaries, one more "
        "value than boundaries and a valid global step; got boundaries [",
        absl::StrJoin(boundaries, ", "), "] and ", values.size(), " values")));
    return Output();
  }
  Scope s = scope.NewSubScope("PiecewiseConstant");
  // From the last interval back: each boundary picks its value or the rest.
  Output result = ops::Const(s, ScalarOf(dtype, values.back()));
  for (size_t i = boundaries.size(); i-- > 0;) {
    // The boundary literal takes the global step's type.
    result = ops::Select(i == 0 ? s.WithOpName("learning_rate") : s,
                         ops::LessEqual(s, global_step, boundaries[i]),
                         ops::Const(s, ScalarOf(dtype, values[i])), result);
  }
  return result;
}

}  // namespace train
}  // namespace distflow
