// Conv2D and its two gradient ops on oneDNN. Tensors stay NHWC (images) and
// HWIO (filters); oneDNN picks its preferred filter layout, and the filter is
// reordered into it (or out of it) on each step. Primitives and reorders are
// built once per shape and cached in the kernel.
#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/ops/window_geometry.h"
#include "kernels/kernel_families.h"
#include "kernels/onednn_util.h"

namespace distflow {
namespace {

using dnnl::memory;
using Tag = dnnl::memory::format_tag;

// The sizes of one convolution.
struct ConvShape {
  int64_t n, h, w, c;  // input
  int64_t kh, kw, o;   // filter (its input channels are c)
  WindowOutput out;    // output rows and columns, with padding
};

class ConvKernelBase : public OpKernel {
 public:
  explicit ConvKernelBase(OpKernelConstruction* ctx) : OpKernel(ctx) {
    ctx->SetStatus(onednn::GetWindowAttrs(ctx, type(), {"strides", "dilations"},
                                          &window_));
  }

 protected:
  // The geometry of convolving `input` by `filter`, or INVALID_ARGUMENT naming
  // both shapes.
  absl::StatusOr<ConvShape> Geometry(const TensorShape& input,
                                     const TensorShape& filter) const {
    if (input.dims() != 4 || filter.dims() != 4 ||
        input.dim_size(3) != filter.dim_size(2)) {
      return absl::InvalidArgumentError(absl::StrCat(
          type(),
          " needs input [N, H, W, C] and filter [KH, KW, C, O] with "
          "the same C, got input ",
          input.DebugString(), " and filter ", filter.DebugString()));
    }
    ConvShape s;
    s.n = input.dim_size(0);
    s.h = input.dim_size(1);
    s.w = input.dim_size(2);
    s.c = input.dim_size(3);
    s.kh = filter.dim_size(0);
    s.kw = filter.dim_size(1);
    s.o = filter.dim_size(3);
    Window2D w = window_;
    w.kh = s.kh;
    w.kw = s.kw;
    auto out = ComputeWindowOutput(w, s.h, s.w);
    if (!out.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(type(), " of input ", input.DebugString(), " by filter ",
                       filter.DebugString(), ": ", out.status().message()));
    }
    s.out = *out;
    // OutputShape builds the shape unchecked.
    auto shape =
        TensorShape::FromDims({s.n, s.out.rows.out, s.out.cols.out, s.o});
    if (!shape.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          type(), " of input ", input.DebugString(), " by filter ",
          filter.DebugString(), ": the output ", shape.status().message()));
    }
    return s;
  }

  TensorShape OutputShape(const ConvShape& s) const {
    return TensorShape({s.n, s.out.rows.out, s.out.cols.out, s.o});
  }

  absl::Status CheckOutBackprop(const ConvShape& s, const Tensor& g) const {
    if (g.shape() == OutputShape(s)) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        type(), ": out_backprop has shape ", g.shape().DebugString(),
        " but the convolution's output has shape ",
        OutputShape(s).DebugString()));
  }

  static std::vector<int64_t> Key(const ConvShape& s) {
    return {s.n, s.h, s.w, s.c, s.kh, s.kw, s.o};
  }

  // The forward descriptor (weights and the rest in `weights_tag` / NHWC).
  dnnl::convolution_forward::desc ForwardDesc(const ConvShape& s,
                                              dnnl::prop_kind kind) const {
    return dnnl::convolution_forward::desc(
        kind, dnnl::algorithm::convolution_direct,
        onednn::NhwcDesc(s.n, s.c, s.h, s.w), AnyWeights(s),
        onednn::NhwcDesc(s.n, s.o, s.out.rows.out, s.out.cols.out),
        {window_.sh, window_.sw}, {window_.dh - 1, window_.dw - 1},
        {s.out.rows.pad_before, s.out.cols.pad_before},
        {s.out.rows.pad_after, s.out.cols.pad_after});
  }

  // A backward descriptor (convolution_backward_data or _weights), its
  // weights in any layout and the rest NHWC.
  template <typename Desc>
  Desc BackwardDesc(const ConvShape& s) const {
    return Desc(dnnl::algorithm::convolution_direct,
                onednn::NhwcDesc(s.n, s.c, s.h, s.w), AnyWeights(s),
                onednn::NhwcDesc(s.n, s.o, s.out.rows.out, s.out.cols.out),
                {window_.sh, window_.sw}, {window_.dh - 1, window_.dw - 1},
                {s.out.rows.pad_before, s.out.cols.pad_before},
                {s.out.rows.pad_after, s.out.cols.pad_after});
  }

  // The primitive descriptor that backward primitives take as a hint.
  dnnl::convolution_forward::primitive_desc TrainingHint(
      const ConvShape& s) const {
    return dnnl::convolution_forward::primitive_desc(
        ForwardDesc(s, dnnl::prop_kind::forward_training), onednn::CpuEngine());
  }

  static memory::desc AnyWeights(const ConvShape& s) {
    return memory::desc({s.o, s.c, s.kh, s.kw}, memory::data_type::f32,
                        Tag::any);
  }
  // The filter as the user holds it: [KH, KW, C, O].
  static memory::desc HwioWeights(const ConvShape& s) {
    return memory::desc({s.o, s.c, s.kh, s.kw}, memory::data_type::f32,
                        Tag::hwio);
  }

 private:
  Window2D window_;
};

// A reorder between the user's filter layout and the primitive's, when they
// differ.
struct WeightsReorder {
  bool needed = false;
  dnnl::reorder reorder;
  static WeightsReorder Make(const memory::desc& from, const memory::desc& to) {
    WeightsReorder r;
    if (from != to) {
      r.needed = true;
      r.reorder = dnnl::reorder(dnnl::reorder::primitive_desc(
          onednn::CpuEngine(), from, onednn::CpuEngine(), to));
    }
    return r;
  }
  // `filter` (HWIO) in the layout `to`, which `reordered` then holds when it
  // differs.
  memory Apply(onednn::Stream* stream, const memory::desc& hwio,
               const Tensor& filter, const memory::desc& to,
               Tensor* reordered) const {
    memory weights = onednn::MemoryOf(hwio, filter);
    if (!needed) return weights;
    *reordered = onednn::Allocate(to);
    memory result = onednn::MemoryOf(to, *reordered);
    stream->Reorder(reorder, weights, result);
    return result;
  }
};

// A cached primitive, and the reorder of its weights.
template <typename Primitive>
struct Entry {
  typename Primitive::primitive_desc pd;
  Primitive conv;
  WeightsReorder weights;
};

using ForwardEntry = Entry<dnnl::convolution_forward>;
using BackwardDataEntry = Entry<dnnl::convolution_backward_data>;
// Its reorder goes from the primitive's layout to HWIO.
using BackwardWeightsEntry = Entry<dnnl::convolution_backward_weights>;

class Conv2DOp : public ConvKernelBase {
 public:
  using ConvKernelBase::ConvKernelBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    auto shape = Geometry(input.shape(), filter.shape());
    DF_OP_REQUIRES_OK(ctx, shape.status());
    const ConvShape& s = *shape;
    Tensor* out = ctx->allocate_output(0, DataType::kFloat, OutputShape(s));
    if (onednn::NothingToCompute(out, {&input, &filter})) return;
    ctx->SetStatus(onednn::Run(type(), [&] {
      const ForwardEntry* e = cache_.Get(Key(s), [&] {
        auto pd = dnnl::convolution_forward::primitive_desc(
            ForwardDesc(s, dnnl::prop_kind::forward_inference),
            onednn::UserScratchpad(), onednn::CpuEngine());
        return ForwardEntry{
            pd, dnnl::convolution_forward(pd),
            WeightsReorder::Make(HwioWeights(s), pd.weights_desc())};
      });
      onednn::Stream stream(ctx);
      Tensor reordered;
      memory weights = e->weights.Apply(&stream, HwioWeights(s), filter,
                                        e->pd.weights_desc(), &reordered);
      stream.Execute(
          e->conv, e->pd.scratchpad_desc(),
          {{DNNL_ARG_SRC, onednn::MemoryOf(e->pd.src_desc(), input)},
           {DNNL_ARG_WEIGHTS, weights},
           {DNNL_ARG_DST, onednn::MemoryOf(e->pd.dst_desc(), *out)}});
    }));
  }

 private:
  onednn::PrimitiveCache<ForwardEntry> cache_;
};

class Conv2DBackpropInputOp : public ConvKernelBase {
 public:
  using ConvKernelBase::ConvKernelBase;
  void Compute(OpKernelContext* ctx) override {
    auto input_shape =
        onednn::ShapeFromSizes(type(), "input_sizes", ctx->input(0));
    DF_OP_REQUIRES_OK(ctx, input_shape.status());
    const Tensor& filter = ctx->input(1);
    const Tensor& grad = ctx->input(2);
    auto shape = Geometry(*input_shape, filter.shape());
    DF_OP_REQUIRES_OK(ctx, shape.status());
    const ConvShape& s = *shape;
    DF_OP_REQUIRES_OK(ctx, CheckOutBackprop(s, grad));
    Tensor* out = ctx->allocate_output(0, DataType::kFloat, *input_shape);
    if (onednn::NothingToCompute(out, {&grad, &filter})) return;
    ctx->SetStatus(onednn::Run(type(), [&] {
      const BackwardDataEntry* e = cache_.Get(Key(s), [&] {
        auto pd = dnnl::convolution_backward_data::primitive_desc(
            BackwardDesc<dnnl::convolution_backward_data::desc>(s),
            onednn::UserScratchpad(), onednn::CpuEngine(), TrainingHint(s));
        return BackwardDataEntry{
            pd, dnnl::convolution_backward_data(pd),
            WeightsReorder::Make(HwioWeights(s), pd.weights_desc())};
      });
      onednn::Stream stream(ctx);
      Tensor reordered;
      memory weights = e->weights.Apply(&stream, HwioWeights(s), filter,
                                        e->pd.weights_desc(), &reordered);
      stream.Execute(
          e->conv, e->pd.scratchpad_desc(),
          {{DNNL_ARG_DIFF_DST, onednn::MemoryOf(e->pd.diff_dst_desc(), grad)},
           {DNNL_ARG_WEIGHTS, weights},
           {DNNL_ARG_DIFF_SRC, onednn::MemoryOf(e->pd.diff_src_desc(), *out)}});
    }));
  }

 private:
  onednn::PrimitiveCache<BackwardDataEntry> cache_;
};

class Conv2DBackpropFilterOp : public ConvKernelBase {
 public:
  using ConvKernelBase::ConvKernelBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    auto filter_shape =
        onednn::ShapeFromSizes(type(), "filter_sizes", ctx->input(1));
    DF_OP_REQUIRES_OK(ctx, filter_shape.status());
    const Tensor& grad = ctx->input(2);
    auto shape = Geometry(input.shape(), *filter_shape);
    DF_OP_REQUIRES_OK(ctx, shape.status());
    const ConvShape& s = *shape;
    DF_OP_REQUIRES_OK(ctx, CheckOutBackprop(s, grad));
    Tensor* out = ctx->allocate_output(0, DataType::kFloat, *filter_shape);
    if (onednn::NothingToCompute(out, {&grad, &input})) return;
    ctx->SetStatus(onednn::Run(type(), [&] {
      const BackwardWeightsEntry* e = cache_.Get(Key(s), [&] {
        auto pd = dnnl::convolution_backward_weights::primitive_desc(
            BackwardDesc<dnnl::convolution_backward_weights::desc>(s),
            onednn::UserScratchpad(), onednn::CpuEngine(), TrainingHint(s));
        return BackwardWeightsEntry{
            pd, dnnl::convolution_backward_weights(pd),
            WeightsReorder::Make(pd.diff_weights_desc(), HwioWeights(s))};
      });
      onednn::Stream stream(ctx);
      Tensor blocked;
      memory result = onednn::MemoryOf(HwioWeights(s), *out);
      memory diff_weights = result;
      if (e->weights.needed) {
        blocked = onednn::Allocate(e->pd.diff_weights_desc());
        diff_weights = onednn::MemoryOf(e->pd.diff_weights_desc(), blocked);
      }
      stream.Execute(
          e->conv, e->pd.scratchpad_desc(),
          {{DNNL_ARG_SRC, onednn::MemoryOf(e->pd.src_desc(), input)},
           {DNNL_ARG_DIFF_DST, onednn::MemoryOf(e->pd.diff_dst_desc(), grad)},
           {DNNL_ARG_DIFF_WEIGHTS, diff_weights}});
      if (e->weights.needed) {
        stream.Reorder(e->weights.reorder, diff_weights, result);
      }
    }));
  }

 private:
  onednn::PrimitiveCache<BackwardWeightsEntry> cache_;
};

}  // namespace

void RegisterConvKernels(KernelRegistry* r) {
  RegisterCpuKernel<Conv2DOp>(r, "Conv2D");
  RegisterCpuKernel<Conv2DBackpropInputOp>(r, "Conv2DBackpropInput");
  RegisterCpuKernel<Conv2DBackpropFilterOp>(r, "Conv2DBackpropFilter");
}

}  // namespace distflow
