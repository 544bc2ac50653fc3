// Automatic differentiation: adding the ops that compute gradients to a graph.
//
//   auto grads = Gradients(scope, {loss}, {w, b});   // d loss / d w, d loss /
//   d b
//
// Gradients are graph ops like any other: run them in a session. The gradient
// of an input reached only through a row lookup (Gather, an embedding) is
// sparse: the rows touched and their gradient values, so that optimizers update
// only those rows.
#ifndef DISTFLOW_GRADIENTS_H_
#define DISTFLOW_GRADIENTS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "distflow/scope.h"

namespace distflow {

// A sparse gradient of a tensor of shape `dense_shape`: row indices[i] (along
// dimension 0) receives values[i, ...]. Indices may repeat (their values add
// up).
struct IndexedSlices {
  Output indices;      // int32 or int64 vector [n]
  Output values;       // [n, dense_shape[1:]...]
  Output dense_shape;  // int32 vector (the shape of the dense gradient)
};

// The gradient of one tensor: dense, sparse, or none (the tensor does not
// affect the differentiated outputs).
class Gradient {
 public:
  Gradient() = default;
  Gradient(const Output& dense) : dense_(dense) {}  // NOLINT: implicit
  Gradient(const IndexedSlices& sparse)             // NOLINT: implicit
      : sparse_(sparse), is_sparse_(true) {}

  bool has_value() const { return is_sparse_ || dense_.valid(); }
  bool is_sparse() const { return is_sparse_; }
  const Output& dense() const { return dense_; }
  const IndexedSlices& sparse() const { return sparse_; }

  // The gradient as a dense tensor (sparse slices summed into zeros). Invalid
  // Output if there is no gradient.
  Output ToDense(const Scope& scope) const;

 private:
  Output dense_;
  IndexedSlices sparse_;
  bool is_sparse_ = false;
};

struct GradientsOptions {
  // Place each gradient op on the device of the forward op it differentiates
  // (for model parallelism); otherwise gradient ops take the scope's device.
  bool colocate_gradients_with_ops = false;
};

// Adds ops computing the gradient of sum(ys[i] * grad_ys[i]) with respect to
// each of `xs` (grad_ys defaults to ones: the gradient of sum(ys)). Returns one
// Gradient per x, without value for an x that no y depends on. Errors name the
// op whose gradient is missing, or the mismatched grad_ys.
absl::StatusOr<std::vector<Gradient>> Gradients(
    const Scope& scope, const std::vector<Output>& ys,
    const std::vector<Output>& xs, const std::vector<Output>& grad_ys = {},
    const GradientsOptions& options = GradientsOptions());

}  // namespace distflow

#endif  // DISTFLOW_GRADIENTS_H_
