// Sharded embedding lookup: route each id to its shard, gather there, stitch
// the rows back in id order.
#include <utility>

#include "absl/strings/str_cat.h"
#include "distflow/ops.h"
#include "distflow/partitioned_variable.h"
#include "graph/node_builder.h"

namespace distflow {
namespace {

// The lookup over `shards`, each gathered in a scope colocated with
// `colocate[i]`.
Output Lookup(const Scope& scope, const std::vector<Output>& shards,
              const std::vector<Operation>& colocate,
              const std::vector<int64_t>& shard_rows, const Input& ids,
              const EmbeddingLookupOptions& options) {
  if (!scope.ok()) return Output();
  if (shards.empty() || shards.size() != shard_rows.size()) {
    scope.UpdateStatus(absl::InvalidArgumentError(absl::StrCat(
        "EmbeddingLookup needs one row count per shard (at least one shard), "
        "got ",
        shards.size(), " shards and ", shard_rows.size(), " row counts")));
    return Output();
  }
  if (options.partition_strategy != "mod" &&
      options.partition_strategy != "div") {
    scope.UpdateStatus(absl::InvalidArgumentError(absl::StrCat(
        "EmbeddingLookup: partition_strategy '", options.partition_strategy,
        "' is unknown: use \"mod\" or \"div\"")));
    return Output();
  }
  Scope s = scope.NewSubScope("embedding_lookup");
  Output id_values = AsOutput(s, ids);
  if (!id_values.valid()) return Output();
  const PartialTensorShape ids_shape = id_values.shape();
  const bool is_vector = !ids_shape.unknown_rank() && ids_shape.dims() == 1;
  if (!is_vector && !ids_shape.IsFullyDefined()) {
    scope.UpdateStatus(absl::InvalidArgumentError(absl::StrCat(
        "EmbeddingLookup: ids ", id_values.name(), " of shape ",
        ids_shape.DebugString(),
        " must be a vector or have a known shape; reshape them to a vector "
        "first")));
    return Output();
  }
  // The rows a lookup returns have the shards' inner dimensions.
  PartialTensorShape inner = shards[0].shape();
  if (!inner.unknown_rank() && inner.dims() >= 1) {
    inner = *PartialTensorShape::FromDims(std::vector<int64_t>(
        inner.dim_sizes().begin() + 1, inner.dim_sizes().end()));
  }

  Output flat = is_vector ? id_values : ops::Reshape(s, id_values, {-1});
  const int n = static_cast<int>(shards.size());
  std::vector<Output> rows;
  std::vector<Output> positions;
  if (n == 1) {
    rows.push_back(ops::Gather(s.ColocateWith(colocate[0]), shards[0], flat));
  } else {
    ops::PartitionedIds routed =
        ops::PartitionIds(s, flat, shard_rows, options.partition_strategy);
    std::vector<Output> local =
        ops::DynamicPartition(s, routed.local_ids, routed.partition, n);
    positions = ops::DynamicPartition(s, routed.position, routed.partition, n);
    for (int p = 0; p < n; ++p) {
      // On the shard's device: only the rows looked up leave it.
      rows.push_back(
          ops::Gather(s.ColocateWith(colocate[p]), shards[p], local[p]));
    }
  }
  if (!s.ok()) return Output();
  Output merged = n == 1 ? rows[0] : ops::DynamicStitch(s, positions, rows);
  const bool inner_known = !inner.unknown_rank() && inner.IsFullyDefined();
  if (ids_shape.IsFullyDefined() && inner_known) {
    // Back to the shape of the ids, with the rows' dimensions after it (this
    // also gives the result a shape known when the graph is built).
    std::vector<int64_t> dims = ids_shape.dim_sizes();
    dims.insert(dims.end(), inner.dim_sizes().begin(), inner.dim_sizes().end());
    return ops::Reshape(s, merged, Tensor::Vector<int64_t>(dims));
  }
  if (is_vector) return merged;
  scope.UpdateStatus(absl::InvalidArgumentError(
      "EmbeddingLookup: ids of rank other than 1 need shards whose row shape "
      "is known"));
  return Output();
}

}  // namespace

Output EmbeddingLookup(const Scope& scope, const std::vector<Output>& shards,
                       const std::vector<int64_t>& shard_rows, const Input& ids,
                       const EmbeddingLookupOptions& options) {
  std::vector<Operation> colocate;
  for (const Output& shard : shards) colocate.push_back(shard.op());
  return Lookup(scope, shards, colocate, shard_rows, ids, options);
}

Output EmbeddingLookup(const Scope& scope, const PartitionedVariable& params,
                       const Input& ids,
                       const EmbeddingLookupOptions& options) {
  if (!params.valid()) {
    scope.UpdateStatus(absl::InvalidArgumentError(
        "EmbeddingLookup of an invalid partitioned variable (its construction "
        "failed: see the scope's first error)"));
    return Output();
  }
  std::vector<Output> shards;
  std::vector<Operation> colocate;
  for (const ops::Variable& shard : params.shards()) {
    shards.push_back(shard);
    // Beside the variable itself, as its reads are.
    colocate.push_back(shard.handle().op());
  }
  return Lookup(scope, shards, colocate, params.shard_rows(), ids, options);
}

}  // namespace distflow
