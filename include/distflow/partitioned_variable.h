// Partitioned variables and sharded embedding lookups.
//
// A large table (an embedding of a big vocabulary) is split along dimension 0
// into shards, each an ordinary variable "<name>/part_<i>". Under a replica
// device setter the shards spread over the ps tasks like any other variables,
// so no single ps holds (or serves) the whole table:
//
//   Scope s = root.WithDeviceFunction(ReplicaDeviceSetter(cluster, worker));
//   PartitionedVariable table(s, "embedding", DataType::kFloat,
//                             TensorShape({100000, 64}), /*num_shards=*/4,
//                             [](const Scope& s, const TensorShape& shape) {
//                               return ops::Zeros(s, shape);
//                             });
//   Output rows = EmbeddingLookup(s, table, ids);   // [n, 64]
//
// A lookup gathers each id's row on the device of the shard that holds it,
// so only the looked-up rows cross the network, and the gradient of a loss
// with respect to each shard is sparse (IndexedSlices over the rows looked
// up), so an optimizer updates only those rows on the ps that holds them.
#ifndef DISTFLOW_PARTITIONED_VARIABLE_H_
#define DISTFLOW_PARTITIONED_VARIABLE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "distflow/ops/state_ops.h"
#include "distflow/scope.h"
#include "distflow/tensor.h"
#include "distflow/tensor_shape.h"
#include "distflow/types.h"

namespace distflow {

// The rows of each shard when `rows` rows are split into `num_shards` shards
// as TensorFlow's fixed_size_partitioner does: min(num_shards, rows) shards,
// the first rows % shards of them one row longer. Empty if rows < 1 or
// num_shards < 1.
std::vector<int64_t> FixedSizePartition(int64_t rows, int num_shards);

class PartitionedVariable {
 public:
  // Builds the initial value of one shard, of `shard_shape`, in `scope` (which
  // places it beside the shard): such as ops::Zeros(scope, shard_shape).
  using Initializer =
      std::function<Output(const Scope& scope, const TensorShape& shard_shape)>;

  PartitionedVariable() = default;
  // Shards of `initial_value` (rank >= 1) split along dimension 0 by
  // FixedSizePartition. Errors (a scalar value, no rows, num_shards < 1) are
  // recorded in the scope and leave the variable invalid.
  PartitionedVariable(const Scope& scope, const std::string& name,
                      const Tensor& initial_value, int num_shards);
  // Shards of a `dtype` table of `shape`, each initialized by `initializer`.
  PartitionedVariable(const Scope& scope, const std::string& name,
                      DataType dtype, const TensorShape& shape, int num_shards,
                      const Initializer& initializer);

  bool valid() const { return !shards_.empty(); }
  // The name the shards are under ("<name>/part_<i>").
  const std::string& name() const { return name_; }
  DataType dtype() const { return dtype_; }
  // The shape of the whole table.
  const TensorShape& shape() const { return shape_; }
  int num_shards() const { return static_cast<int>(shards_.size()); }
  // The shard variables, in row order; shard i holds rows
  // [shard_offset(i), shard_offset(i) + shard_rows()[i]) of the table.
  const std::vector<ops::Variable>& shards() const { return shards_; }
  const std::vector<int64_t>& shard_rows() const { return rows_; }
  int64_t shard_offset(int i) const;
  // The shard initializers (also run by GlobalVariablesInitializer).
  const std::vector<Operation>& initializers() const { return initializers_; }

  // The whole table: the shards' values concatenated along dimension 0, built
  // in `scope` (so on its device, such as the worker).
  Output Value(const Scope& scope) const;

 private:
  void Init(const Scope& scope, const std::string& name, DataType dtype,
            const TensorShape& shape, int num_shards);

  std::string name_;
  DataType dtype_ = DataType::kInvalid;
  TensorShape shape_;
  std::vector<ops::Variable> shards_;
  std::vector<int64_t> rows_;
  std::vector<Operation> initializers_;
};

struct EmbeddingLookupOptions {
  // How ids map to shards: "mod" (id i is row i / n of shard i % n, for n
  // shards) or "div" (shards hold contiguous id ranges, in order: the table
  // that Value() returns).
  std::string partition_strategy = "mod";
};

// The rows of `params` named by `ids` (int32 or int64, ids of the whole
// table): the result has shape ids.shape + params.shape[1:]. Each row is
// gathered on the device of its shard (the gather is colocated with the
// shard's variable), and the rows are put back in the order of the ids.
// ids must be a vector or have a fully known shape. An id outside
// [0, rows of the table) fails the step, naming the id.
Output EmbeddingLookup(const Scope& scope, const PartitionedVariable& params,
                       const Input& ids,
                       const EmbeddingLookupOptions& options = {});
// The same over the given shards (a table split along dimension 0 into
// tensors of shard_rows[i] rows; variables or any other values).
Output EmbeddingLookup(const Scope& scope, const std::vector<Output>& shards,
                       const std::vector<int64_t>& shard_rows, const Input& ids,
                       const EmbeddingLookupOptions& options = {});

}  // namespace distflow

#endif  // DISTFLOW_PARTITIONED_VARIABLE_H_
