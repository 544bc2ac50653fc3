#include "distflow/partitioned_variable.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "distflow/ops.h"
#include "graph/graph.h"

namespace distflow {

std::vector<int64_t> FixedSizePartition(int64_t rows, int num_shards) {
  if (rows < 1 || num_shards < 1) return {};
  const int64_t shards = std::min<int64_t>(num_shards, rows);
  std::vector<int64_t> sizes(shards, rows / shards);
  for (int64_t i = 0; i < rows % shards; ++i) ++sizes[i];
  return sizes;
}

int64_t PartitionedVariable::shard_offset(int i) const {
  int64_t offset = 0;
  for (int k = 0; k < i && k < static_cast<int>(rows_.size()); ++k)
    offset += rows_[k];
  return offset;
}

void PartitionedVariable::Init(const Scope& scope, const std::string& name,
                               DataType dtype, const TensorShape& shape,
                               int num_shards) {
  auto fail = [&](const std::string& why) {
    scope.UpdateStatus(absl::InvalidArgumentError(
        absl::StrCat("partitioned variable '", name, "' of shape ",
                     shape.DebugString(), ": ", why)));
  };
  if (shape.dims() < 1 || shape.dim_size(0) < 1) {
    fail("it needs at least one row to split along dimension 0");
    return;
  }
  if (num_shards < 1) {
    fail(absl::StrCat("num_shards is ", num_shards, "; give 1 or more"));
    return;
  }
  name_ = name;
  dtype_ = dtype;
  shape_ = shape;
  rows_ = FixedSizePartition(shape.dim_size(0), num_shards);
}

PartitionedVariable::PartitionedVariable(const Scope& scope,
                                         const std::string& name,
                                         const Tensor& initial_value,
                                         int num_shards) {
  Init(scope, name, initial_value.dtype(), initial_value.shape(), num_shards);
  if (rows_.empty()) return;
  Scope group = scope.NewSubScope(name);
  int64_t offset = 0;
  for (size_t i = 0; i < rows_.size(); ++i) {
    // A slice shares the value's buffer; the shard's constant holds just its
    // rows.
    const Tensor part = initial_value.Slice(offset, offset + rows_[i]);
    offset += rows_[i];
    ops::Variable shard(group.WithOpName(absl::StrCat("part_", i)), part);
    if (!shard.handle().valid()) {
      shards_.clear();
      return;
    }
    shards_.push_back(shard);
    initializers_.push_back(shard.initializer());
  }
}

PartitionedVariable::PartitionedVariable(
    const Scope& scope, const std::string& name, DataType dtype,
    const TensorShape& shape, int num_shards, const Initializer& initializer) {
  Init(scope, name, dtype, shape, num_shards);
  if (rows_.empty()) return;
  if (!initializer) {
    scope.UpdateStatus(absl::InvalidArgumentError(
        absl::StrCat("partitioned variable '", name,
                     "': the initializer is empty; pass a function such as "
                     "ops::Zeros")));
    rows_.clear();
    return;
  }
  Scope group = scope.NewSubScope(name);
  for (size_t i = 0; i < rows_.size(); ++i) {
    std::vector<int64_t> dims = shape.dim_sizes();
    dims[0] = rows_[i];
    const TensorShape shard_shape = *TensorShape::FromDims(dims);
    ops::Variable shard(group.WithOpName(absl::StrCat("part_", i)), dtype,
                        PartialTensorShape(shard_shape));
    if (!shard.handle().valid()) {
      shards_.clear();
      return;
    }
    // The initial value is computed beside the shard, so that only the
    // program (not the value) travels to the ps.
    Operation handle = shard.handle().op();
    Scope beside = scope.NewSubScopeOf(handle).ColocateWith(handle);
    Output value = initializer(beside.WithOpName("initial_value"), shard_shape);
    Output assign = ops::Assign(beside.WithOpName("Assign"), shard, value);
    if (!assign.valid()) {
      shards_.clear();
      return;
    }
    scope.graph()->AddToCollection(kVariableInitializersCollection,
                                   assign.op().name());
    shards_.push_back(shard);
    initializers_.push_back(assign.op());
  }
}

Output PartitionedVariable::Value(const Scope& scope) const {
  if (!valid()) {
    scope.UpdateStatus(absl::InvalidArgumentError(
        "Value() of an invalid partitioned variable (its construction "
        "failed: see the scope's first error)"));
    return Output();
  }
  if (shards_.size() == 1) return ops::Identity(scope, shards_[0]);
  // Stitching with constant row numbers concatenates the shards; the row
  // count is then known when the graph is built.
  Scope s = scope.NewSubScope(name_ + "_value");
  std::vector<Output> indices, data;
  int64_t offset = 0;
  for (size_t i = 0; i < shards_.size(); ++i) {
    std::vector<int32_t> rows(rows_[i]);
    for (int64_t r = 0; r < rows_[i]; ++r)
      rows[r] = static_cast<int32_t>(offset + r);
    offset += rows_[i];
    indices.push_back(ops::Const(s, Tensor::Vector<int32_t>(rows)));
    data.push_back(shards_[i]);
  }
  return ops::DynamicStitch(s, indices, data);
}

}  // namespace distflow
