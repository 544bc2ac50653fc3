// Routing rows between shards: DynamicPartition, DynamicStitch and
// PartitionIds, the pieces of a sharded embedding lookup.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/node_builder.h"
#include "graph/ops/op_families.h"
#include "graph/shape_inference.h"

namespace distflow {
namespace {

// `shape` without its first `n` dimensions (unknown rank stays unknown).
PartialTensorShape DropDims(const PartialTensorShape& shape, int n) {
  if (shape.unknown_rank()) return PartialTensorShape();
  const auto& dims = shape.dim_sizes();
  return *PartialTensorShape::FromDims(std::vector<int64_t>(
      dims.begin() + std::min<size_t>(n, dims.size()), dims.end()));
}

// [rows] + inner.
PartialTensorShape Prepend(int64_t rows, const PartialTensorShape& inner) {
  if (inner.unknown_rank()) return PartialTensorShape();
  std::vector<int64_t> dims = {rows};
  dims.insert(dims.end(), inner.dim_sizes().begin(), inner.dim_sizes().end());
  return *PartialTensorShape::FromDims(dims);
}

absl::Status DynamicPartitionShape(InferenceContext* c) {
  const PartialTensorShape& data = c->input(0);
  const PartialTensorShape& partitions = c->input(1);
  if (!data.unknown_rank() && !partitions.unknown_rank()) {
    bool prefix = partitions.dims() <= data.dims();
    for (int i = 0; prefix && i < partitions.dims(); ++i) {
      const int64_t a = data.dim_size(i), b = partitions.dim_size(i);
      prefix = a < 0 || b < 0 || a == b;
    }
    if (!prefix) {
      return absl::InvalidArgumentError(absl::StrCat(
          "partitions of shape ", partitions.DebugString(),
          " must be a prefix of the data's shape ", data.DebugString()));
    }
  }
  const PartialTensorShape out =
      partitions.unknown_rank()
          ? PartialTensorShape()
          : Prepend(-1, DropDims(data, partitions.dims()));
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, out);
  return absl::OkStatus();
}

absl::Status DynamicStitchShape(InferenceContext* c) {
  const int n = c->num_inputs() / 2;
  PartialTensorShape inner;  // the common shape after the index dimensions
  int64_t rows = 0;          // max index + 1, if every index is a constant
  for (int i = 0; i < n; ++i) {
    const PartialTensorShape& idx = c->input(i);
    const PartialTensorShape& data = c->input(n + i);
    if (!idx.unknown_rank() && !data.unknown_rank()) {
      bool prefix = idx.dims() <= data.dims();
      for (int d = 0; prefix && d < idx.dims(); ++d) {
        const int64_t a = data.dim_size(d), b = idx.dim_size(d);
        prefix = a < 0 || b < 0 || a == b;
      }
      if (!prefix) {
        return absl::InvalidArgumentError(
            absl::StrCat("data ", i, " of shape ", data.DebugString(),
                         " does not start with the shape of indices ", i, " ",
                         idx.DebugString()));
      }
    }
    if (!idx.unknown_rank()) {
      auto merged = inner.MergeWith(DropDims(data, idx.dims()));
      if (!merged.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "data ", i, " of shape ", data.DebugString(),
            " has other inner dimensions than the data before it (",
            inner.DebugString(), ")"));
      }
      inner = *merged;
    }
    const Tensor* value = c->input_value(i);
    if (value == nullptr || rows < 0) {
      rows = -1;
    } else {
      for (int32_t v : value->flat<int32_t>())
        rows = std::max<int64_t>(rows, int64_t{v} + 1);
    }
  }
  c->set_output(0, Prepend(rows, inner));
  return absl::OkStatus();
}

absl::Status PartitionIdsShape(InferenceContext* c) {
  const PartialTensorShape& ids = c->input(0);
  const int64_t n = ids.num_elements();  // -1 when unknown
  for (int i = 0; i < 3; ++i) c->set_output(i, PartialTensorShape({n}));
  std::string strategy;
  DF_RETURN_IF_ERROR(c->GetAttr("partition_strategy", &strategy));
  if (strategy != "mod" && strategy != "div") {
    return absl::InvalidArgumentError(
        absl::StrCat("partition_strategy '", strategy,
                     "' is unknown: use \"mod\" or \"div\""));
  }
  std::vector<int64_t> rows;
  DF_RETURN_IF_ERROR(c->GetAttr("shard_rows", &rows));
  if (rows.empty()) {
    return absl::InvalidArgumentError("shard_rows is empty: give one shard");
  }
  for (int64_t r : rows) {
    if (r < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shard_rows has a negative size ", r));
    }
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterEmbeddingOps(OpRegistry* r) {
  AddOp(r, OpDefBuilder("DynamicPartition")
               .Input("data", "T")
               .Input("partitions", DataType::kInt32)
               .OutputList("outputs", "T", "num_partitions")
               .TypeAttr("T")
               .IntAttr("num_partitions", 1)
               .Summary("Splits data into num_partitions tensors by partition.")
               .SetShapeFn(DynamicPartitionShape));
  {
    OpDefBuilder b("DynamicStitch");
    b.Output("merged", "T")
        .TypeAttr("T")
        .IntAttr("N", 1)
        .Summary("merged[indices[i][j]] = data[i][j]; undoes DynamicPartition.")
        .SetShapeFn(DynamicStitchShape);
    OpDef def = std::move(b).Build();
    // Two lists of N inputs: int32 indices, then data.
    def.inputs.push_back(ArgDef{"indices", DataType::kInt32, "", "N"});
    def.inputs.push_back(ArgDef{"data", DataType::kInvalid, "T", "N"});
    absl::Status s = r->Register(std::move(def));
    DF_CHECK(s.ok()) << s;
  }
  AddOp(r, OpDefBuilder("PartitionIds")
               .Input("ids", "Tindices")
               .Output("partition", DataType::kInt32)
               .Output("local_ids", "Tindices")
               .Output("position", DataType::kInt32)
               .TypeAttr("Tindices", {DataType::kInt32, DataType::kInt64})
               .Attr("shard_rows", AttrType::kIntList)
               .Attr("partition_strategy", MakeAttr("mod"))
               .Summary("The shard and the row within it of each id of a "
                        "table split along dimension 0.")
               .SetShapeFn(PartitionIdsShape));
}

namespace ops {

std::vector<Output> DynamicPartition(const Scope& scope, const Input& data,
                                     const Input& partitions,
                                     int num_partitions) {
  Output d = AsOutput(scope, data);
  Output p = AsOutput(scope, partitions);
  Operation op = NodeBuilder(scope, "DynamicPartition", "DynamicPartition")
                     .Input(d)
                     .Input(p)
                     .Attr("num_partitions", int64_t{num_partitions})
                     .Finalize();
  std::vector<Output> outputs;
  for (int i = 0; i < std::max(num_partitions, 0); ++i)
    outputs.push_back(op.valid() ? op.output(i) : Output());
  return outputs;
}

Output DynamicStitch(const Scope& scope, const std::vector<Output>& indices,
                     const std::vector<Output>& data) {
  if (indices.size() != data.size() || indices.empty()) {
    scope.UpdateStatus(absl::InvalidArgumentError(absl::StrCat(
        "DynamicStitch needs as many index tensors as data tensors (at least "
        "one), got ",
        indices.size(), " and ", data.size())));
    return Output();
  }
  return NodeBuilder(scope, "DynamicStitch", "DynamicStitch")
      .Input(indices)
      .Input(data)
      .Attr("N", static_cast<int64_t>(indices.size()))
      .Finalize()
      .output(0);
}

PartitionedIds PartitionIds(const Scope& scope, const Input& ids,
                            const std::vector<int64_t>& shard_rows,
                            const std::string& strategy) {
  Output in = AsOutput(scope, ids);
  Operation op = NodeBuilder(scope, "PartitionIds", "PartitionIds")
                     .Input(in)
                     .Attr("shard_rows", shard_rows)
                     .Attr("partition_strategy", strategy)
                     .Finalize();
  if (!op.valid()) return {};
  return {op.output(0), op.output(1), op.output(2)};
}

}  // namespace ops
}  // namespace distflow
