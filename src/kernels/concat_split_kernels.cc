// Concat, Split, Pack and Unpack.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/type_dispatch.h"
#include "graph/ops/array_util.h"
#include "kernels/copy_box.h"
#include "kernels/kernel_families.h"

namespace distflow {
namespace {

// Copies all of `src` into `dst` at `dst_begin`; src's dims are `src_dims`
// (src's shape, possibly with size-1 dimensions added to match dst's rank).
absl::Status CopyInto(const Tensor& src, absl::Span<const int64_t> src_dims,
                      Tensor* dst, absl::Span<const int64_t> dst_begin,
                      ThreadPool* pool) {
  const std::vector<int64_t> zeros(src_dims.size(), 0);
  return VisitDataType(src.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    CopyBox<T>(src.data<T>(), src_dims, zeros, dst->data<T>(),
               dst->shape().dim_sizes(), dst_begin, src_dims, pool);
    return absl::OkStatus();
  });
}

// Copies the box of `src` at `src_begin` of extent `box` into all of `dst`.
absl::Status CopyOut(const Tensor& src, absl::Span<const int64_t> src_begin,
                     absl::Span<const int64_t> box, Tensor* dst,
                     ThreadPool* pool) {
  const std::vector<int64_t> zeros(box.size(), 0);
  return VisitDataType(src.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    CopyBox<T>(src.data<T>(), src.shape().dim_sizes(), src_begin,
               dst->data<T>(), box, zeros, box, pool);
    return absl::OkStatus();
  });
}

class ConcatOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs() - 1;
    const Tensor& first = ctx->input(0);
    const std::vector<int64_t> axis_v = IndexValues(ctx->input(n));
    DF_OP_REQUIRES(ctx, axis_v.size() == 1 && first.dims() > 0,
                   absl::InvalidArgumentError(absl::StrCat(
                       "Concat needs a scalar axis and values of rank >= 1, "
                       "got axis ",
                       ctx->input(n).DebugString(), " and values of shape ",
                       first.shape().DebugString())));
    auto a = NormalizeAxis(axis_v[0], first.dims(), "axis of Concat");
    DF_OP_REQUIRES_OK(ctx, a.status());
    std::vector<int64_t> dims = first.shape().dim_sizes();
    dims[*a] = 0;
    for (int i = 0; i < n; ++i) {
      const Tensor& v = ctx->input(i);
      bool same = v.dims() == first.dims();
      for (int d = 0; same && d < v.dims(); ++d) {
        same = d == *a || v.dim_size(d) == first.dim_size(d);
      }
      DF_OP_REQUIRES(ctx, same,
                     absl::InvalidArgumentError(absl::StrCat(
                         "cannot concatenate value ", i, " of shape ",
                         v.shape().DebugString(), " with value 0 of shape ",
                         first.shape().DebugString(), " along axis ", *a,
                         ": the other dimensions must match")));
      // Values of no elements may have any size along the axis.
      DF_OP_REQUIRES(
          ctx, !__builtin_add_overflow(dims[*a], v.dim_size(*a), &dims[*a]),
          absl::InvalidArgumentError(absl::StrCat(
              "concatenating value ", i, " of shape ", v.shape().DebugString(),
              " along axis ", *a, " makes a dimension larger than int64")));
    }
    auto shape = TensorShape::FromDims(dims);
    DF_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = ctx->allocate_output(0, first.dtype(), *shape);
    std::vector<int64_t> at(dims.size(), 0);
    for (int i = 0; i < n; ++i) {
      const Tensor& v = ctx->input(i);
      DF_OP_REQUIRES_OK(ctx, CopyInto(v, v.shape().dim_sizes(), out, at,
                                      ctx->intra_op_pool()));
      at[*a] += v.dim_size(*a);
    }
  }
};

class ConcatOffsetOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs() - 1;
    const Tensor& first = ctx->input(1);
    const std::vector<int64_t> axis = IndexValues(ctx->input(0));
    DF_OP_REQUIRES(
        ctx, axis.size() == 1,
        absl::InvalidArgumentError(absl::StrCat(
            "concat_dim must be a scalar, got ", ctx->input(0).DebugString())));
    auto a = NormalizeAxis(axis[0], static_cast<int>(first.NumElements()),
                           "axis of ConcatOffset");
    DF_OP_REQUIRES_OK(ctx, a.status());
    int32_t offset = 0;
    for (int i = 0; i < n; ++i) {
      const Tensor& shape = ctx->input(i + 1);
      DF_OP_REQUIRES(ctx, shape.NumElements() == first.NumElements(),
                     absl::InvalidArgumentError(absl::StrCat(
                         "shape ", i, " ", shape.DebugString(), " and shape 0 ",
                         first.DebugString(), " differ in rank")));
      Tensor out(DataType::kInt32, shape.shape());  // zeros
      out.flat<int32_t>()[*a] = offset;
      // The sizes are fed values: the sum must stay an int32.
      DF_OP_REQUIRES(
          ctx,
          !__builtin_add_overflow(offset, shape.flat<int32_t>()[*a], &offset),
          absl::InvalidArgumentError(absl::StrCat(
              "the offsets of shapes ", first.DebugString(), " ... ",
              shape.DebugString(), " along axis ", *a, " overflow int32")));
      ctx->set_output(i, out);
    }
  }
  bool IsExpensive() const override { return false; }
};

class SplitOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(1);
    const int n = num_outputs();
    DF_OP_REQUIRES(
        ctx, ctx->input(0).NumElements() == 1,
        absl::InvalidArgumentError(absl::StrCat("axis must be a scalar, got ",
                                                ctx->input(0).DebugString())));
    const std::vector<int64_t> axis = IndexValues(ctx->input(0));
    DF_OP_REQUIRES(
        ctx, axis.size() == 1,
        absl::InvalidArgumentError(absl::StrCat(
            "concat_dim must be a scalar, got ", ctx->input(0).DebugString())));
    auto a = NormalizeAxis(axis[0], x.dims(), "axis of Split");
    DF_OP_REQUIRES_OK(ctx, a.status());
    DF_OP_REQUIRES(ctx, x.dim_size(*a) % n == 0,
                   absl::InvalidArgumentError(absl::StrCat(
                       "cannot split dimension ", *a, " of shape ",
                       x.shape().DebugString(), " into ", n, " equal parts")));
    const int64_t part = x.dim_size(*a) / n;
    bool leading_ones = true;  // every dimension before the axis is 1
    for (int d = 0; d < *a; ++d)
      leading_ones = leading_ones && x.dim_size(d) == 1;
    std::vector<int64_t> dims = x.shape().dim_sizes();
    dims[*a] = part;
    const TensorShape shape = *TensorShape::FromDims(dims);
    std::vector<int64_t> begin(dims.size(), 0);
    for (int i = 0; i < n; ++i) {
      begin[*a] = i * part;
      if (leading_ones && x.NumElements() > 0) {
        // Each part is a contiguous range of rows: share the buffer.
        const int64_t inner = x.NumElements() / x.dim_size(*a);
        auto flat = x.Reshape(TensorShape({x.dim_size(*a), inner}));
        DF_OP_REQUIRES_OK(ctx, flat.status());
        auto view = flat->Slice(i * part, (i + 1) * part).Reshape(shape);
        DF_OP_REQUIRES_OK(ctx, view.status());
        ctx->set_output(i, *view);
        continue;
      }
      Tensor* out = ctx->allocate_output(i, x.dtype(), shape);
      DF_OP_REQUIRES_OK(ctx,
                        CopyOut(x, begin, dims, out, ctx->intra_op_pool()));
    }
  }
};

class PackOp : public OpKernel {
 public:
  explicit PackOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    ctx->SetStatus(ctx->GetAttr("axis", &axis_));
  }
  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs();
    const Tensor& first = ctx->input(0);
    auto a = NormalizeAxis(axis_, first.dims() + 1, "axis of Stack");
    DF_OP_REQUIRES_OK(ctx, a.status());
    std::vector<int64_t> one = first.shape().dim_sizes();
    one.insert(one.begin() + *a, 1);
    std::vector<int64_t> dims = one;
    dims[*a] = n;
    auto shape = TensorShape::FromDims(dims);
    DF_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = ctx->allocate_output(0, first.dtype(), *shape);
    std::vector<int64_t> at(dims.size(), 0);
    for (int i = 0; i < n; ++i) {
      const Tensor& v = ctx->input(i);
      DF_OP_REQUIRES(
          ctx, v.shape() == first.shape(),
          absl::InvalidArgumentError(absl::StrCat(
              "cannot stack value ", i, " of shape ", v.shape().DebugString(),
              " with value 0 of shape ", first.shape().DebugString(),
              ": all values must have one shape")));
      at[*a] = i;
      DF_OP_REQUIRES_OK(ctx, CopyInto(v, one, out, at, ctx->intra_op_pool()));
    }
  }

 private:
  int64_t axis_ = 0;
};

class UnpackOp : public OpKernel {
 public:
  explicit UnpackOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    ctx->SetStatus(ctx->GetAttr("axis", &axis_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const int n = num_outputs();
    auto a = NormalizeAxis(axis_, x.dims(), "axis of Unstack");
    DF_OP_REQUIRES_OK(ctx, a.status());
    DF_OP_REQUIRES(ctx, x.dim_size(*a) == n,
                   absl::InvalidArgumentError(absl::StrCat(
                       "cannot unstack shape ", x.shape().DebugString(),
                       " along axis ", *a, " into ", n, " tensors")));
    std::vector<int64_t> box = x.shape().dim_sizes();
    box[*a] = 1;
    std::vector<int64_t> dims = box;
    dims.erase(dims.begin() + *a);
    const TensorShape shape = *TensorShape::FromDims(dims);
    std::vector<int64_t> begin(box.size(), 0);
    for (int i = 0; i < n; ++i) {
      if (*a == 0) {
        auto view = x.Slice(i, i + 1).Reshape(shape);
        DF_OP_REQUIRES_OK(ctx, view.status());
        ctx->set_output(i, *view);
        continue;
      }
      begin[*a] = i;
      Tensor* out = ctx->allocate_output(i, x.dtype(), shape);
      DF_OP_REQUIRES_OK(ctx, CopyOut(x, begin, box, out, ctx->intra_op_pool()));
    }
  }

 private:
  int64_t axis_ = 0;
};

}  // namespace

void RegisterConcatSplitKernels(KernelRegistry* r) {
  RegisterCpuKernel<ConcatOp>(r, "Concat");
  RegisterCpuKernel<ConcatOffsetOp>(r, "ConcatOffset");
  RegisterCpuKernel<SplitOp>(r, "Split");
  RegisterCpuKernel<PackOp>(r, "Pack");
  RegisterCpuKernel<UnpackOp>(r, "Unpack");
}

}  // namespace distflow
