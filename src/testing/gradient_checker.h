// The one finite-difference gradient checker every differentiable op's test
// uses: it compares the Jacobian that Gradients() builds with one measured by
// central differences, both computed in a real local session.
#ifndef DISTFLOW_TESTING_GRADIENT_CHECKER_H_
#define DISTFLOW_TESTING_GRADIENT_CHECKER_H_

#include <vector>

#include "absl/status/statusor.h"
#include "distflow/scope.h"
#include "distflow/tensor.h"

namespace distflow {
namespace test {

struct GradientCheckOptions {
  // Step of the central difference (applied in the inputs' own type).
  double delta = 1e-3;
};

// The largest absolute difference between the symbolic and the numeric
// Jacobian of `y` with respect to `xs`. Each x must be a Placeholder (float32
// or float64) that `x_values` feeds; other placeholders of `y` cannot be fed.
// Sparse gradients are compared after densifying them.
absl::StatusOr<double> MaxGradientError(
    const Scope& scope, const std::vector<Output>& xs,
    const std::vector<Tensor>& x_values, const Output& y,
    const GradientCheckOptions& options = GradientCheckOptions());

}  // namespace test
}  // namespace distflow

#endif  // DISTFLOW_TESTING_GRADIENT_CHECKER_H_
