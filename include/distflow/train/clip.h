// Gradient clipping by the global norm of a set of gradients (Pascanu et al.,
// 2013): when the gradients together are longer than clip_norm, all of them
// are scaled down by the same factor, keeping their direction.
#ifndef DISTFLOW_TRAIN_CLIP_H_
#define DISTFLOW_TRAIN_CLIP_H_

#include <vector>

#include "absl/status/statusor.h"
#include "distflow/gradients.h"
#include "distflow/scope.h"
#include "distflow/train/optimizer.h"

namespace distflow {
namespace train {

struct ClippedGradients {
  // The gradients in the same order; those without value stay without value.
  std::vector<Gradient> gradients;
  // sqrt(sum of every gradient element squared), before clipping: a scalar of
  // the gradients' type.
  Output global_norm;
};

// Scales every gradient by clip_norm / max(global_norm, clip_norm), which is
// 1 while the global norm is within clip_norm. Sparse gradients scale their
// values (a row listed twice counts twice in the norm, as TensorFlow does).
// `clip_norm` is a positive scalar (a number or an Output of the gradients'
// type). INVALID_ARGUMENT if no gradient has a value or if they differ in
// type (naming both types); the scope's first error if building failed.
absl::StatusOr<ClippedGradients> ClipByGlobalNorm(
    const Scope& scope, const std::vector<Gradient>& gradients,
    const Input& clip_norm);

// The same for the output of Optimizer::ComputeGradients, ready for
// ApplyGradients; `global_norm`, if not null, receives the norm.
absl::StatusOr<std::vector<GradAndVar>> ClipByGlobalNorm(
    const Scope& scope, const std::vector<GradAndVar>& grads_and_vars,
    const Input& clip_norm, Output* global_norm = nullptr);

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_CLIP_H_
