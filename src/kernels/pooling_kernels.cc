// MaxPool, AvgPool and their gradient ops on oneDNN, over NHWC tensors.
// Primitives are built once per shape and cached in the kernel.
//
// MaxPoolGrad reruns the forward pooling to get oneDNN's record of where each
// maximum is (its workspace) instead of searching every window for the value
// of orig_output: one cheap pass that also breaks ties the same way as the
// forward op.
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/ops/window_geometry.h"
#include "kernels/kernel_families.h"
#include "kernels/onednn_util.h"

namespace distflow {
namespace {

struct PoolShape {
  int64_t n, h, w, c;
  WindowOutput out;
};

class PoolKernelBase : public OpKernel {
 public:
  explicit PoolKernelBase(OpKernelConstruction* ctx) : OpKernel(ctx) {
    ctx->SetStatus(
        onednn::GetWindowAttrs(ctx, type(), {"ksize", "strides"}, &window_));
  }

 protected:
  absl::StatusOr<PoolShape> Geometry(const TensorShape& input) const {
    if (input.dims() != 4) {
      return absl::InvalidArgumentError(absl::StrCat(
          type(), " needs an NHWC input (rank 4), got ", input.DebugString()));
    }
    PoolShape s{input.dim_size(0),
                input.dim_size(1),
                input.dim_size(2),
                input.dim_size(3),
                {}};
    auto out = ComputeWindowOutput(window_, s.h, s.w);
    if (!out.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(type(), " of input ",
                                                     input.DebugString(), ": ",
                                                     out.status().message()));
    }
    s.out = *out;
    // OutputShape builds the shape unchecked.
    auto shape =
        TensorShape::FromDims({s.n, s.out.rows.out, s.out.cols.out, s.c});
    if (!shape.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(type(), " of input ", input.DebugString(),
                       ": the output ", shape.status().message()));
    }
    return s;
  }

  TensorShape OutputShape(const PoolShape& s) const {
    return TensorShape({s.n, s.out.rows.out, s.out.cols.out, s.c});
  }

  absl::Status CheckGrad(const PoolShape& s, const Tensor& grad) const {
    if (grad.shape() == OutputShape(s)) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        type(), ": grad has shape ", grad.shape().DebugString(),
        " but the pooling's output has shape ", OutputShape(s).DebugString()));
  }

  static std::vector<int64_t> Key(const PoolShape& s) {
    return {s.n, s.h, s.w, s.c};
  }

  dnnl::pooling_forward::desc ForwardDesc(const PoolShape& s,
                                          dnnl::prop_kind kind,
                                          dnnl::algorithm alg) const {
    return dnnl::pooling_forward::desc(
        kind, alg, onednn::NhwcDesc(s.n, s.c, s.h, s.w),
        onednn::NhwcDesc(s.n, s.c, s.out.rows.out, s.out.cols.out),
        {window_.sh, window_.sw}, {window_.kh, window_.kw},
        {s.out.rows.pad_before, s.out.cols.pad_before},
        {s.out.rows.pad_after, s.out.cols.pad_after});
  }

  dnnl::pooling_backward::desc BackwardDesc(const PoolShape& s,
                                            dnnl::algorithm alg) const {
    return dnnl::pooling_backward::desc(
        alg, onednn::NhwcDesc(s.n, s.c, s.h, s.w),
        onednn::NhwcDesc(s.n, s.c, s.out.rows.out, s.out.cols.out),
        {window_.sh, window_.sw}, {window_.kh, window_.kw},
        {s.out.rows.pad_before, s.out.cols.pad_before},
        {s.out.rows.pad_after, s.out.cols.pad_after});
  }

 private:
  Window2D window_;
};

// TensorFlow's AvgPool divides by the number of input elements in the window.
constexpr dnnl::algorithm kAvg = dnnl::algorithm::pooling_avg_exclude_padding;

struct ForwardEntry {
  dnnl::pooling_forward::primitive_desc pd;
  dnnl::pooling_forward pool;
};

template <bool kMax>
class PoolOp : public PoolKernelBase {
 public:
  using PoolKernelBase::PoolKernelBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    auto shape = Geometry(input.shape());
    DF_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out =
        ctx->allocate_output(0, DataType::kFloat, OutputShape(*shape));
    if (out->NumElements() == 0) return;
    ctx->SetStatus(onednn::Run(type(), [&] {
      const ForwardEntry* e = cache_.Get(Key(*shape), [&] {
        auto pd = dnnl::pooling_forward::primitive_desc(
            ForwardDesc(*shape, dnnl::prop_kind::forward_inference,
                        kMax ? dnnl::algorithm::pooling_max : kAvg),
            onednn::UserScratchpad(), onednn::CpuEngine());
        return ForwardEntry{pd, dnnl::pooling_forward(pd)};
      });
      onednn::Stream stream(ctx);
      stream.Execute(
          e->pool, e->pd.scratchpad_desc(),
          {{DNNL_ARG_SRC, onednn::MemoryOf(e->pd.src_desc(), input)},
           {DNNL_ARG_DST, onednn::MemoryOf(e->pd.dst_desc(), *out)}});
    }));
  }

 private:
  onednn::PrimitiveCache<ForwardEntry> cache_;
};

struct BackwardEntry {
  dnnl::pooling_forward::primitive_desc fwd_pd;  // max: to get the workspace
  dnnl::pooling_forward fwd;
  dnnl::pooling_backward::primitive_desc pd;
  dnnl::pooling_backward pool;
};

class MaxPoolGradOp : public PoolKernelBase {
 public:
  using PoolKernelBase::PoolKernelBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& orig_output = ctx->input(1);
    const Tensor& grad = ctx->input(2);
    auto shape = Geometry(input.shape());
    DF_OP_REQUIRES_OK(ctx, shape.status());
    const PoolShape& s = *shape;
    DF_OP_REQUIRES(ctx, orig_output.shape() == OutputShape(s),
                   absl::InvalidArgumentError(
                       absl::StrCat(type(), ": orig_output has shape ",
                                    orig_output.shape().DebugString(),
                                    ", want ", OutputShape(s).DebugString())));
    DF_OP_REQUIRES_OK(ctx, CheckGrad(s, grad));
    Tensor* out = ctx->allocate_output(0, DataType::kFloat, input.shape());
    if (onednn::NothingToCompute(out, {&grad})) return;
    ctx->SetStatus(onednn::Run(type(), [&] {
      const BackwardEntry* e = cache_.Get(Key(s), [&] {
        auto fwd_pd = dnnl::pooling_forward::primitive_desc(
            ForwardDesc(s, dnnl::prop_kind::forward_training,
                        dnnl::algorithm::pooling_max),
            onednn::UserScratchpad(), onednn::CpuEngine());
        auto pd = dnnl::pooling_backward::primitive_desc(
            BackwardDesc(s, dnnl::algorithm::pooling_max),
            onednn::UserScratchpad(), onednn::CpuEngine(), fwd_pd);
        return BackwardEntry{fwd_pd, dnnl::pooling_forward(fwd_pd), pd,
                             dnnl::pooling_backward(pd)};
      });
      onednn::Stream stream(ctx);
      Tensor pooled = onednn::Allocate(e->fwd_pd.dst_desc());
      Tensor workspace = onednn::Allocate(e->fwd_pd.workspace_desc());
      dnnl::memory ws = onednn::MemoryOf(e->fwd_pd.workspace_desc(), workspace);
      stream.Execute(
          e->fwd, e->fwd_pd.scratchpad_desc(),
          {{DNNL_ARG_SRC, onednn::MemoryOf(e->fwd_pd.src_desc(), input)},
           {DNNL_ARG_DST, onednn::MemoryOf(e->fwd_pd.dst_desc(), pooled)},
           {DNNL_ARG_WORKSPACE, ws}});
      stream.Execute(
          e->pool, e->pd.scratchpad_desc(),
          {{DNNL_ARG_DIFF_DST, onednn::MemoryOf(e->pd.diff_dst_desc(), grad)},
           {DNNL_ARG_DIFF_SRC, onednn::MemoryOf(e->pd.diff_src_desc(), *out)},
           {DNNL_ARG_WORKSPACE, ws}});
    }));
  }

 private:
  onednn::PrimitiveCache<BackwardEntry> cache_;
};

class AvgPoolGradOp : public PoolKernelBase {
 public:
  using PoolKernelBase::PoolKernelBase;
  void Compute(OpKernelContext* ctx) override {
    auto input_shape =
        onednn::ShapeFromSizes(type(), "orig_input_shape", ctx->input(0));
    DF_OP_REQUIRES_OK(ctx, input_shape.status());
    const Tensor& grad = ctx->input(1);
    auto shape = Geometry(*input_shape);
    DF_OP_REQUIRES_OK(ctx, shape.status());
    const PoolShape& s = *shape;
    DF_OP_REQUIRES_OK(ctx, CheckGrad(s, grad));
    Tensor* out = ctx->allocate_output(0, DataType::kFloat, *input_shape);
    if (onednn::NothingToCompute(out, {&grad})) return;
    ctx->SetStatus(onednn::Run(type(), [&] {
      const BackwardEntry* e = cache_.Get(Key(s), [&] {
        auto fwd_pd = dnnl::pooling_forward::primitive_desc(
            ForwardDesc(s, dnnl::prop_kind::forward_training, kAvg),
            onednn::CpuEngine());
        auto pd = dnnl::pooling_backward::primitive_desc(
            BackwardDesc(s, kAvg), onednn::UserScratchpad(),
            onednn::CpuEngine(), fwd_pd);
        return BackwardEntry{fwd_pd, dnnl::pooling_forward(fwd_pd), pd,
                             dnnl::pooling_backward(pd)};
      });
      onednn::Stream stream(ctx);
      stream.Execute(
          e->pool, e->pd.scratchpad_desc(),
          {{DNNL_ARG_DIFF_DST, onednn::MemoryOf(e->pd.diff_dst_desc(), grad)},
           {DNNL_ARG_DIFF_SRC, onednn::MemoryOf(e->pd.diff_src_desc(), *out)}});
    }));
  }

 private:
  onednn::PrimitiveCache<BackwardEntry> cache_;
};

}  // namespace

void RegisterPoolingKernels(KernelRegistry* r) {
  RegisterCpuKernel<PoolOp<true>>(r, "MaxPool");
  RegisterCpuKernel<PoolOp<false>>(r, "AvgPool");
  RegisterCpuKernel<MaxPoolGradOp>(r, "MaxPoolGrad");
  RegisterCpuKernel<AvgPoolGradOp>(r, "AvgPoolGrad");
}

}  // namespace distflow
