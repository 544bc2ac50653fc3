// DynamicPartition, DynamicStitch, PartitionIds.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/type_dispatch.h"
#include "kernels/kernel_families.h"

namespace distflow {
namespace {

// Dimensions [from, rank) of `shape`, as a shape. They may not make a shape:
// in [0, 2^40, 2^40] the leading 0 keeps the element count in range.
absl::StatusOr<TensorShape> InnerShape(const TensorShape& shape, int from) {
  std::vector<int64_t> dims;
  for (int i = from; i < shape.dims(); ++i) dims.push_back(shape.dim_size(i));
  return TensorShape::FromDims(dims);
}

// [rows] + inner.
absl::StatusOr<TensorShape> RowsOf(int64_t rows, const TensorShape& inner) {
  std::vector<int64_t> dims = {rows};
  for (int i = 0; i < inner.dims(); ++i) dims.push_back(inner.dim_size(i));
  return TensorShape::FromDims(dims);
}

// True if `prefix`'s dimensions start `shape`'s.
bool IsPrefix(const TensorShape& prefix, const TensorShape& shape) {
  if (prefix.dims() > shape.dims()) return false;
  for (int i = 0; i < prefix.dims(); ++i) {
    if (prefix.dim_size(i) != shape.dim_size(i)) return false;
  }
  return true;
}

class DynamicPartitionOp : public OpKernel {
 public:
  explicit DynamicPartitionOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    ctx->SetStatus(ctx->GetAttr("num_partitions", &num_partitions_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    const Tensor& partitions = ctx->input(1);
    DF_OP_REQUIRES(ctx, IsPrefix(partitions.shape(), data.shape()),
                   absl::InvalidArgumentError(absl::StrCat(
                       "partitions of shape ", partitions.shape().DebugString(),
                       " must be a prefix of the data's shape ",
                       data.shape().DebugString())));
    auto p = partitions.flat<int32_t>();
    std::vector<int64_t> counts(num_partitions_, 0);
    for (size_t j = 0; j < p.size(); ++j) {
      DF_OP_REQUIRES(ctx, p[j] >= 0 && p[j] < num_partitions_,
                     absl::InvalidArgumentError(absl::StrCat(
                         "partitions[", j, "] = ", p[j], " is not in [0, ",
                         num_partitions_, ")")));
      ++counts[p[j]];
    }
    auto inner_shape = InnerShape(data.shape(), partitions.dims());
    DF_OP_REQUIRES_OK(ctx, inner_shape.status());
    const TensorShape& inner = *inner_shape;
    const int64_t slice = inner.num_elements();
    std::vector<Tensor*> outs(num_partitions_);
    for (int i = 0; i < num_partitions_; ++i) {
      auto shape = RowsOf(counts[i], inner);
      DF_OP_REQUIRES_OK(ctx, shape.status());
      outs[i] = ctx->allocate_output(i, data.dtype(), *shape);
    }
    DF_OP_REQUIRES_OK(ctx, VisitDataType(data.dtype(), [&](auto tag) {
                        using T = typename decltype(tag)::type;
                        auto in = data.flat<T>();
                        std::vector<int64_t> next(num_partitions_, 0);
                        for (size_t j = 0; j < p.size(); ++j) {
                          T* dst = outs[p[j]]->data<T>() + next[p[j]]++ * slice;
                          std::copy_n(in.data() + j * slice, slice, dst);
                        }
                        return absl::OkStatus();
                      }));
  }

 private:
  int num_partitions_ = 1;
};

class DynamicStitchOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs() / 2;
    auto inner_shape = InnerShape(ctx->input(n).shape(), ctx->input(0).dims());
    DF_OP_REQUIRES_OK(ctx, inner_shape.status());
    const TensorShape& inner = *inner_shape;
    int64_t rows = 0;
    for (int i = 0; i < n; ++i) {
      const Tensor& idx = ctx->input(i);
      const Tensor& data = ctx->input(n + i);
      auto data_inner = InnerShape(data.shape(), idx.dims());
      DF_OP_REQUIRES(ctx,
                     IsPrefix(idx.shape(), data.shape()) && data_inner.ok() &&
                         *data_inner == inner,
                     absl::InvalidArgumentError(absl::StrCat(
                         "data ", i, " of shape ", data.shape().DebugString(),
                         " must be the shape of indices ", i, " ",
                         idx.shape().DebugString(), " followed by ",
                         inner.DebugString())));
      for (int32_t v : idx.flat<int32_t>()) {
        DF_OP_REQUIRES(ctx, v >= 0,
                       absl::InvalidArgumentError(absl::StrCat(
                           "indices ", i, " holds the negative index ", v)));
        rows = std::max<int64_t>(rows, int64_t{v} + 1);
      }
    }
    const int64_t slice = inner.num_elements();
    // Zeroed, so that rows no index names are 0.
    auto merged_shape = RowsOf(rows, inner);
    DF_OP_REQUIRES_OK(ctx, merged_shape.status());
    Tensor merged(ctx->input(n).dtype(), *merged_shape);
    DF_OP_REQUIRES_OK(ctx, VisitDataType(merged.dtype(), [&](auto tag) {
                        using T = typename decltype(tag)::type;
                        T* out = merged.data<T>();
                        for (int i = 0; i < n; ++i) {
                          auto idx = ctx->input(i).flat<int32_t>();
                          const T* in = ctx->input(n + i).data<T>();
                          for (size_t j = 0; j < idx.size(); ++j) {
                            std::copy_n(in + j * slice, slice,
                                        out + idx[j] * slice);
                          }
                        }
                        return absl::OkStatus();
                      }));
    ctx->set_output(0, std::move(merged));
  }
};

class PartitionIdsOp : public OpKernel {
 public:
  explicit PartitionIdsOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    std::string strategy;
    ctx->SetStatus(ctx->GetAttr("partition_strategy", &strategy));
    ctx->SetStatus(ctx->GetAttr("shard_rows", &rows_));
    mod_ = strategy == "mod";
    if (ctx->status().ok() && !mod_ && strategy != "div") {
      ctx->SetStatus(absl::InvalidArgumentError(
          absl::StrCat("partition_strategy '", strategy,
                       "' is unknown: use \"mod\" or \"div\"")));
    }
    if (ctx->status().ok() && rows_.empty()) {
      ctx->SetStatus(absl::InvalidArgumentError("shard_rows is empty"));
    }
    offsets_.push_back(0);
    for (int64_t r : rows_) offsets_.push_back(offsets_.back() + r);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& ids = ctx->input(0);
    const int64_t n = ids.NumElements();
    Tensor* partition =
        ctx->allocate_output(0, DataType::kInt32, TensorShape({n}));
    Tensor* local = ctx->allocate_output(1, ids.dtype(), TensorShape({n}));
    Tensor* position =
        ctx->allocate_output(2, DataType::kInt32, TensorShape({n}));
    for (int64_t j = 0; j < n; ++j)
      position->flat<int32_t>()[j] = static_cast<int32_t>(j);
    if (ids.dtype() == DataType::kInt32) {
      Route<int32_t>(ctx, ids, partition, local);
    } else {
      Route<int64_t>(ctx, ids, partition, local);
    }
  }
  bool IsExpensive() const override { return false; }

 private:
  template <typename T>
  void Route(OpKernelContext* ctx, const Tensor& ids, Tensor* partition,
             Tensor* local) {
    const int64_t total = offsets_.back();
    const int64_t shards = static_cast<int64_t>(rows_.size());
    auto in = ids.flat<T>();
    auto p = partition->flat<int32_t>();
    auto out = local->flat<T>();
    for (size_t j = 0; j < in.size(); ++j) {
      const int64_t id = in[j];
      DF_OP_REQUIRES(ctx, id >= 0 && id < total,
                     absl::InvalidArgumentError(
                         absl::StrCat("id ", id, " (at position ", j,
                                      ") is not a row of the table, which has ",
                                      total, " rows in ", shards, " shards")));
      int64_t shard, row;
      if (mod_) {
        shard = id % shards;
        row = id / shards;
        DF_OP_REQUIRES(ctx, row < rows_[shard],
                       absl::InvalidArgumentError(absl::StrCat(
                           "id ", id, " belongs to shard ", shard, " as row ",
                           row, " but that shard has only ", rows_[shard],
                           " rows: \"mod\" needs shards of balanced sizes")));
      } else {
        shard = std::upper_bound(offsets_.begin(), offsets_.end(), id) -
                offsets_.begin() - 1;
        row = id - offsets_[shard];
      }
      p[j] = static_cast<int32_t>(shard);
      out[j] = static_cast<T>(row);
    }
  }

  std::vector<int64_t> rows_;
  std::vector<int64_t> offsets_;  // offsets_[p]: the first id of shard p
  bool mod_ = true;
};

}  // namespace

void RegisterEmbeddingKernels(KernelRegistry* r) {
  RegisterCpuKernel<DynamicPartitionOp>(r, "DynamicPartition");
  RegisterCpuKernel<DynamicStitchOp>(r, "DynamicStitch");
  RegisterCpuKernel<PartitionIdsOp>(r, "PartitionIds");
}

}  // namespace distflow
