// Op constructors for routing rows between shards: the building blocks of
// sharded embedding lookups (see distflow/partitioned_variable.h).
// Each adds a node to the scope's graph and returns its output(s); errors are
// recorded in the scope (see distflow/scope.h).
#ifndef DISTFLOW_OPS_EMBEDDING_OPS_H_
#define DISTFLOW_OPS_EMBEDDING_OPS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "distflow/scope.h"

namespace distflow {
namespace ops {

// Splits `data` into `num_partitions` tensors by `partitions` (int32, whose
// shape is a prefix of data's shape): output i holds, in order, the slices
// data[j, ...] with partitions[j] == i, stacked along a new dimension 0.
// A partition number outside [0, num_partitions) fails the step, naming it.
std::vector<Output> DynamicPartition(const Scope& scope, const Input& data,
                                     const Input& partitions,
                                     int num_partitions);

// The inverse of DynamicPartition: merged[indices[i][j], ...] = data[i][j, ...]
// for int32 tensors indices[i], with data[i].shape = indices[i].shape + a
// shape common to all. merged has max(index) + 1 rows; a row no index names is
// zero; if an index repeats, the last one (in list order) wins.
Output DynamicStitch(const Scope& scope, const std::vector<Output>& indices,
                     const std::vector<Output>& data);

// Where each id of a sharded table lives. The table has sum(shard_rows) rows
// split along dimension 0 into shards of shard_rows[p] rows; `ids` (int32 or
// int64, any shape, read flat) are rows of the whole table. With "div" shard p
// holds a contiguous range of ids; with "mod" id i lives in shard
// i % shard_rows.size(), as row i / shard_rows.size().
struct PartitionedIds {
  Output partition;  // int32 [n]: the shard of each id
  Output local_ids;  // like ids, [n]: the id's row within its shard
  Output position;   // int32 [n]: 0, 1, ..., n-1 (for stitching back)
};
// An id outside [0, sum(shard_rows)) fails the step, naming the id.
PartitionedIds PartitionIds(const Scope& scope, const Input& ids,
                            const std::vector<int64_t>& shard_rows,
                            const std::string& strategy = "mod");

}  // namespace ops
}  // namespace distflow

#endif  // DISTFLOW_OPS_EMBEDDING_OPS_H_
