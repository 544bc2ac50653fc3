// Gradients of the shard-routing ops. DynamicStitch and DynamicPartition pass
// each row's gradient back to the row it came from; the row numbers themselves
// (indices, partitions, ids) are integers and carry none.
#include "distflow/ops.h"
#include "graph/gradients/grad_registry.h"

namespace distflow {
namespace {

// merged[indices[i][j]] = data[i][j], so d data[i][j] = d merged[indices[i][j]]
// (when an index repeats, every copy receives the gradient of the row, as
// TensorFlow does).
absl::Status DynamicStitchGrad(const Scope& scope, const Operation& op,
                               const std::vector<Output>& grads,
                               std::vector<Gradient>* dx) {
  const int n = op.node()->num_inputs() / 2;
  for (int i = 0; i < n; ++i) {
    (*dx)[n + i] = ops::Gather(scope, grads[0], OpInput(op, i));
  }
  return absl::OkStatus();
}

// Each output row came from one element position of `partitions`: partition
// those positions the same way, stitch the gradients back to them and restore
// the data's shape.
absl::Status DynamicPartitionGrad(const Scope& scope, const Operation& op,
                                  const std::vector<Output>& grads,
                                  std::vector<Gradient>* dx) {
  const Output data = OpInput(op, 0);
  const Output partitions = OpInput(op, 1);
  const int n = static_cast<int>(grads.size());
  Output positions =
      ops::Reshape(scope, ops::Range(scope, 0, ops::Size(scope, partitions)),
                   ops::Shape(scope, partitions));
  std::vector<Output> where =
      ops::DynamicPartition(scope, positions, partitions, n);
  Output stitched = ops::DynamicStitch(scope, where, grads);
  (*dx)[0] = ops::Reshape(scope, stitched, ops::Shape(scope, data));
  return absl::OkStatus();
}

}  // namespace

void RegisterEmbeddingGradients(GradRegistry* r) {
  AddGrad(r, "DynamicStitch", DynamicStitchGrad);
  AddGrad(r, "DynamicPartition", DynamicPartitionGrad);
  AddNoGrad(r, "PartitionIds");
}

}  // namespace distflow
