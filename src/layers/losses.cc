// Losses and metrics.
#include "distflow/layers.h"
#include "distflow/ops/nn_ops.h"

namespace distflow {
namespace {

// Every axis of `x`, as an int32 vector.
Output AllAxes(const Scope& scope, const Output& x) {
  return ops::Range(scope, 0, ops::Rank(scope, x), 1);
}

}  // namespace

namespace losses {

Output SparseSoftmaxCrossEntropy(const Scope& scope, const Input& labels,
                                 const Input& logits) {
  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(scope, logits, labels);
  return ops::Mean(scope, xent.loss, 0);
}

Output SoftmaxCrossEntropy(const Scope& scope, const Input& labels,
                           const Input& logits) {
  auto xent = ops::SoftmaxCrossEntropyWithLogits(scope, logits, labels);
  return ops::Mean(scope, xent.loss, 0);
}

Output MeanSquaredError(const Scope& scope, const Input& labels,
                        const Input& predictions) {
  Output d = ops::SquaredDifference(scope, labels, predictions);
  return ops::Mean(scope, d, AllAxes(scope, d));
}

}  // namespace losses

namespace metrics {

Output Accuracy(const Scope& scope, const Input& labels, const Input& logits) {
  Output predicted = ops::ArgMax(scope, logits, 1);
  Output truth = ops::Cast(scope, labels, DataType::kInt64);
  Output right =
      ops::Cast(scope, ops::Equal(scope, predicted, truth), DataType::kFloat);
  return ops::Mean(scope, right, 0);
}

}  // namespace metrics
}  // namespace distflow
