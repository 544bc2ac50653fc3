// Slice, Pad (with zeros) and Tile.
#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/gathered_tensor.h"
#include "core/type_dispatch.h"
#include "graph/ops/array_util.h"
#include "kernels/copy_box.h"
#include "kernels/kernel_families.h"

namespace distflow {
namespace {

// CopyBox for a tensor of any dtype.
absl::Status CopyBoxOf(const Tensor& src, absl::Span<const int64_t> src_begin,
                       Tensor* dst, absl::Span<const int64_t> dst_begin,
                       absl::Span<const int64_t> box, ThreadPool* pool) {
  return VisitDataType(src.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    CopyBox<T>(src.data<T>(), src.shape().dim_sizes(), src_begin,
               dst->data<T>(), dst->shape().dim_sizes(), dst_begin, box, pool);
    return absl::OkStatus();
  });
}

class SliceOp : public OpKernel {
 public:
  explicit SliceOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    const Endpoint& x = ctx->node().input(0);
    of_vector_ = x.node != nullptr && x.node->output_shape(x.index).dims() == 1;
  }
  // A slice of a vector is a view of its input (below), which costs less
  // than handing it to another thread: the members of a packed transfer are
  // such slices, and the first kernels of a step wait for them.
  bool IsExpensive() const override { return !of_vector_; }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const std::vector<int64_t> begin = IndexValues(ctx->input(1));
    std::vector<int64_t> size = IndexValues(ctx->input(2));
    const int rank = x.dims();
    DF_OP_REQUIRES(
        ctx,
        ctx->input(1).dims() == 1 && ctx->input(2).dims() == 1 &&
            static_cast<int>(begin.size()) == rank &&
            static_cast<int>(size.size()) == rank,
        absl::InvalidArgumentError(absl::StrCat(
            "begin ", ctx->input(1).DebugString(), " and size ",
            ctx->input(2).DebugString(), " must be vectors of ", rank,
            " entries for x of shape ", x.shape().DebugString())));
    // Only dimension 0 cut: the rows are contiguous, a view suffices.
    bool rows_only = rank > 0;
    for (int i = 0; i < rank; ++i) {
      const int64_t dim = x.dim_size(i);
      if (size[i] == -1) size[i] = dim - begin[i];
      DF_OP_REQUIRES(
          ctx, begin[i] >= 0 && size[i] >= 0 && begin[i] + size[i] <= dim,
          absl::InvalidArgumentError(absl::StrCat(
              "slice of dimension ", i, " (begin ", begin[i], ", size ",
              ctx->input(2).DebugString(), ") is outside x of shape ",
              x.shape().DebugString(),
              "; need 0 <= begin and begin + size <= the dimension (size -1: "
              "to the end)")));
      if (i > 0 && (begin[i] != 0 || size[i] != dim)) rows_only = false;
    }
    if (rows_only) {
      // A member of a packed transfer whose parts were not copied together
      // (a received pack mapped from the sender) is a view of its part.
      std::optional<Tensor> part =
          rank == 1 ? GatheredElements(x, begin[0], begin[0] + size[0])
                    : std::nullopt;
      ctx->set_output(0, part ? *std::move(part)
                              : x.Slice(begin[0], begin[0] + size[0]));
      return;
    }
    Tensor* out =
        ctx->allocate_output(0, x.dtype(), *TensorShape::FromDims(size));
    const std::vector<int64_t> zeros(rank, 0);
    DF_OP_REQUIRES_OK(
        ctx, CopyBoxOf(x, begin, out, zeros, size, ctx->intra_op_pool()));
  }

 private:
  bool of_vector_ = false;
};

class PadOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& paddings = ctx->input(1);
    const int rank = x.dims();
    DF_OP_REQUIRES(
        ctx,
        paddings.dims() == 2 && paddings.dim_size(0) == rank &&
            paddings.dim_size(1) == 2,
        absl::InvalidArgumentError(absl::StrCat(
            "paddings must have shape [", rank, ", 2] for x of shape ",
            x.shape().DebugString(), ", got ", paddings.TypeString())));
    const std::vector<int64_t> pads = IndexValues(paddings);
    std::vector<int64_t> before(rank), out_dims(rank);
    for (int i = 0; i < rank; ++i) {
      DF_OP_REQUIRES(ctx, pads[2 * i] >= 0 && pads[2 * i + 1] >= 0,
                     absl::InvalidArgumentError(
                         absl::StrCat("paddings ", paddings.DebugString(),
                                      " has a negative entry in row ", i)));
      before[i] = pads[2 * i];
      out_dims[i] = x.dim_size(i) + pads[2 * i] + pads[2 * i + 1];
    }
    auto shape = TensorShape::FromDims(out_dims);
    DF_OP_REQUIRES_OK(ctx, shape.status());
    Tensor out(x.dtype(), *shape);  // zeros (empty strings)
    const std::vector<int64_t> zeros(rank, 0);
    DF_OP_REQUIRES_OK(ctx,
                      CopyBoxOf(x, zeros, &out, before, x.shape().dim_sizes(),
                                ctx->intra_op_pool()));
    ctx->set_output(0, out);
  }
};

class TileOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& multiples = ctx->input(1);
    const int rank = x.dims();
    const std::vector<int64_t> m = IndexValues(multiples);
    DF_OP_REQUIRES(
        ctx, multiples.dims() == 1 && static_cast<int>(m.size()) == rank,
        absl::InvalidArgumentError(absl::StrCat(
            "multiples ", multiples.DebugString(), " must be a vector of ",
            rank, " entries for x of shape ", x.shape().DebugString())));
    std::vector<int64_t> out_dims(rank);
    int64_t copies = 1;
    for (int i = 0; i < rank; ++i) {
      DF_OP_REQUIRES(
          ctx, m[i] >= 0,
          absl::InvalidArgumentError(absl::StrCat(
              "multiples ", multiples.DebugString(), " has a negative entry")));
      out_dims[i] = x.dim_size(i) * m[i];
      copies *= m[i];
    }
    auto shape = TensorShape::FromDims(out_dims);
    DF_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = ctx->allocate_output(0, x.dtype(), *shape);
    if (out->NumElements() == 0) return;
    // One copy of x per tile; each tile is a box of the output.
    const std::vector<int64_t> zeros(rank, 0);
    std::vector<int64_t> tile(rank, 0), at(rank, 0);
    for (int64_t c = 0; c < copies; ++c) {
      for (int i = 0; i < rank; ++i) at[i] = tile[i] * x.dim_size(i);
      DF_OP_REQUIRES_OK(ctx, CopyBoxOf(x, zeros, out, at, x.shape().dim_sizes(),
                                       ctx->intra_op_pool()));
      for (int i = rank - 1; i >= 0; --i) {
        if (++tile[i] < m[i]) break;
        tile[i] = 0;
      }
    }
  }
};

class TileGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const std::vector<int64_t> dims = IndexValues(ctx->input(1));
    const int rank = dy.dims();
    bool ok = static_cast<int>(dims.size()) == rank;
    std::vector<int64_t> m(rank, 0);
    int64_t tiles = 1;
    for (int i = 0; ok && i < rank; ++i) {
      ok = dims[i] > 0 ? dy.dim_size(i) % dims[i] == 0 : dy.dim_size(i) == 0;
      m[i] = dims[i] > 0 ? dy.dim_size(i) / dims[i] : 0;
      tiles *= m[i];
    }
    DF_OP_REQUIRES(
        ctx, ok,
        absl::InvalidArgumentError(absl::StrCat(
            "TileGrad: dy of shape ", dy.shape().DebugString(),
            " is not a tiling of shape ", ctx->input(1).DebugString())));
    auto shape = TensorShape::FromDims(dims);
    DF_OP_REQUIRES_OK(ctx, shape.status());
    Tensor out(dy.dtype(), *shape);  // zeros
    if (out.NumElements() == 0) {
      ctx->set_output(0, out);
      return;
    }
    const int64_t inner = dims.empty() ? 1 : dims[rank - 1];
    const int64_t rows = out.NumElements() / inner;
    DF_OP_REQUIRES_OK(ctx, VisitNumericType(dy.dtype(), [&](auto tag) {
                        using T = typename decltype(tag)::type;
                        const T* src = dy.data<T>();
                        T* dst = out.data<T>();
                        // For each tile and each row of x: add the tile's row
                        // into x's row.
                        std::vector<int64_t> tile(rank, 0), row(rank, 0);
                        for (int64_t t = 0; t < tiles; ++t) {
                          std::fill(row.begin(), row.end(), 0);
                          for (int64_t r = 0; r < rows; ++r) {
                            int64_t from = 0;
                            for (int d = 0; d < rank; ++d) {
                              from = from * dy.dim_size(d) + tile[d] * dims[d] +
                                     row[d];
                            }
                            const T* s = src + from;
                            T* o = dst + r * inner;
                            for (int64_t k = 0; k < inner; ++k) o[k] += s[k];
                            for (int d = rank - 2; d >= 0; --d) {
                              if (++row[d] < dims[d]) break;
                              row[d] = 0;
                            }
                          }
                          for (int d = rank - 1; d >= 0; --d) {
                            if (++tile[d] < m[d]) break;
                            tile[d] = 0;
                          }
                        }
                        return absl::OkStatus();
                      }));
    ctx->set_output(0, out);
  }
};

}  // namespace

void RegisterSliceKernels(KernelRegistry* r) {
  RegisterCpuKernel<SliceOp>(r, "Slice");
  RegisterCpuKernel<PadOp>(r, "Pad");
  RegisterCpuKernel<TileOp>(r, "Tile");
  RegisterCpuKernel<TileGradOp>(r, "TileGrad");
}

}  // namespace distflow
