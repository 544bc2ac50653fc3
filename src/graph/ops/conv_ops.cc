// 2-D convolution and pooling over NHWC images, with their gradient ops.
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/node_builder.h"
#include "graph/ops/op_families.h"
#include "graph/ops/window_geometry.h"
#include "graph/shape_inference.h"

namespace distflow {
namespace {

// Strides, padding and dilations of a convolution (the filter size is left
// at 1: it comes from the filter's shape).
absl::Status ReadConvWindow(InferenceContext* c, Window2D* w) {
  std::vector<int64_t> strides, dilations;
  std::string padding, format;
  DF_RETURN_IF_ERROR(c->GetAttr("strides", &strides));
  DF_RETURN_IF_ERROR(c->GetAttr("dilations", &dilations));
  DF_RETURN_IF_ERROR(c->GetAttr("padding", &padding));
  DF_RETURN_IF_ERROR(c->GetAttr("data_format", &format));
  if (format != "NHWC") {
    return absl::InvalidArgumentError(absl::StrCat(
        "only data_format \"NHWC\" is supported, got \"", format, "\""));
  }
  DF_RETURN_IF_ERROR(GetSpatialPair("strides", strides, &w->sh, &w->sw));
  DF_RETURN_IF_ERROR(GetSpatialPair("dilations", dilations, &w->dh, &w->dw));
  DF_ASSIGN_OR_RETURN(w->padding, ParsePadding(padding));
  return absl::OkStatus();
}

absl::Status ReadPoolWindow(InferenceContext* c, Window2D* w) {
  std::vector<int64_t> ksize, strides;
  std::string padding;
  DF_RETURN_IF_ERROR(c->GetAttr("ksize", &ksize));
  DF_RETURN_IF_ERROR(c->GetAttr("strides", &strides));
  DF_RETURN_IF_ERROR(c->GetAttr("padding", &padding));
  DF_RETURN_IF_ERROR(GetSpatialPair("ksize", ksize, &w->kh, &w->kw));
  DF_RETURN_IF_ERROR(GetSpatialPair("strides", strides, &w->sh, &w->sw));
  DF_ASSIGN_OR_RETURN(w->padding, ParsePadding(padding));
  return absl::OkStatus();
}

// [N, out_h, out_w, channels] for a window over `input` (NHWC); sizes that are
// not known stay unknown.
absl::StatusOr<PartialTensorShape> WindowOutputShape(
    const PartialTensorShape& input, const Window2D& w, int64_t channels) {
  if (input.unknown_rank()) {
    return PartialTensorShape({-1, -1, -1, channels});
  }
  if (input.dims() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input must be NHWC (rank 4), got shape ", input.DebugString()));
  }
  int64_t oh = -1, ow = -1;
  if (input.dim_size(1) >= 0) {
    DF_ASSIGN_OR_RETURN(WindowDim d, ComputeWindowDim(input.dim_size(1), w.kh,
                                                      w.sh, w.dh, w.padding));
    oh = d.out;
  }
  if (input.dim_size(2) >= 0) {
    DF_ASSIGN_OR_RETURN(WindowDim d, ComputeWindowDim(input.dim_size(2), w.kw,
                                                      w.sw, w.dw, w.padding));
    ow = d.out;
  }
  return PartialTensorShape({input.dim_size(0), oh, ow, channels});
}

absl::Status Conv2DShape(InferenceContext* c) {
  Window2D w;
  DF_RETURN_IF_ERROR(ReadConvWindow(c, &w));
  DF_RETURN_IF_ERROR(c->WithRank(0, 4));
  DF_RETURN_IF_ERROR(c->WithRank(1, 4));
  const PartialTensorShape& in = c->input(0);
  const PartialTensorShape& f = c->input(1);
  int64_t out_channels = -1;
  if (!f.unknown_rank()) {
    w.kh = f.dim_size(0) < 0 ? 1 : f.dim_size(0);
    w.kw = f.dim_size(1) < 0 ? 1 : f.dim_size(1);
    out_channels = f.dim_size(3);
    if (!in.unknown_rank() && in.dim_size(3) >= 0 && f.dim_size(2) >= 0 &&
        in.dim_size(3) != f.dim_size(2)) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", in.DebugString(), " has ", in.dim_size(3),
                       " channels but filter ", f.DebugString(), " expects ",
                       f.dim_size(2), " (filter is [height, width, in, out])"));
    }
    if (f.dim_size(0) < 0 || f.dim_size(1) < 0) {
      c->set_output(
          0, PartialTensorShape({in.unknown_rank() ? -1 : in.dim_size(0), -1,
                                 -1, out_channels}));
      return absl::OkStatus();
    }
  }
  DF_ASSIGN_OR_RETURN(PartialTensorShape out,
                      WindowOutputShape(in, w, out_channels));
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status PoolShape(InferenceContext* c) {
  Window2D w;
  DF_RETURN_IF_ERROR(ReadPoolWindow(c, &w));
  DF_RETURN_IF_ERROR(c->WithRank(0, 4));
  const PartialTensorShape& in = c->input(0);
  DF_ASSIGN_OR_RETURN(
      PartialTensorShape out,
      WindowOutputShape(in, w, in.unknown_rank() ? -1 : in.dim_size(3)));
  c->set_output(0, out);
  return absl::OkStatus();
}

// Output 0 is the shape held by input `i` (a vector of 4 sizes).
absl::Status ShapeFromInput(InferenceContext* c, int i) {
  DF_ASSIGN_OR_RETURN(PartialTensorShape s, c->InputAsShape(i));
  if (!s.unknown_rank() && s.dims() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("the shape input must hold 4 sizes (NHWC or HWIO), got ",
                     s.DebugString()));
  }
  c->set_output(0, s.unknown_rank() ? PartialTensorShape::UnknownDims(4) : s);
  return absl::OkStatus();
}

OpDefBuilder ConvOp(const char* name) {
  return std::move(
      OpDefBuilder(name)
          .TypeAttr("T", {DataType::kFloat})
          .Attr("strides", AttrType::kIntList)
          .Attr("padding", AttrType::kString)
          .Attr("dilations", MakeAttr(std::vector<int64_t>{1, 1, 1, 1}))
          .Attr("data_format", MakeAttr("NHWC")));
}

OpDefBuilder PoolOp(const char* name) {
  return std::move(OpDefBuilder(name)
                       .TypeAttr("T", {DataType::kFloat})
                       .Attr("ksize", AttrType::kIntList)
                       .Attr("strides", AttrType::kIntList)
                       .Attr("padding", AttrType::kString)
                       .Attr("data_format", MakeAttr("NHWC")));
}

Output BuildConv(NodeBuilder builder, const std::vector<int64_t>& strides,
                 const std::string& padding,
                 const ops::Conv2DOptions& options) {
  return builder.Attr("strides", strides)
      .Attr("padding", padding)
      .Attr("dilations", options.dilations)
      .Finalize()
      .output(0);
}

Output BuildPool(NodeBuilder builder, const std::vector<int64_t>& ksize,
                 const std::vector<int64_t>& strides,
                 const std::string& padding) {
  return builder.Attr("ksize", ksize)
      .Attr("strides", strides)
      .Attr("padding", padding)
      .Finalize()
      .output(0);
}

}  // namespace

void RegisterConvOps(OpRegistry* r) {
  AddOp(r, ConvOp("Conv2D")
               .Input("input", "T")
               .Input("filter", "T")
               .Output("output", "T")
               .SetShapeFn(Conv2DShape));
  AddOp(r, ConvOp("Conv2DBackpropInput")
               .Input("input_sizes", DataType::kInt32)
               .Input("filter", "T")
               .Input("out_backprop", "T")
               .Output("output", "T")
               .SetShapeFn(
                   [](InferenceContext* c) { return ShapeFromInput(c, 0); }));
  AddOp(r, ConvOp("Conv2DBackpropFilter")
               .Input("input", "T")
               .Input("filter_sizes", DataType::kInt32)
               .Input("out_backprop", "T")
               .Output("output", "T")
               .SetShapeFn(
                   [](InferenceContext* c) { return ShapeFromInput(c, 1); }));
  for (const char* name : {"MaxPool", "AvgPool"}) {
    AddOp(r, PoolOp(name)
                 .Input("value", "T")
                 .Output("output", "T")
                 .SetShapeFn(PoolShape));
  }
  AddOp(r, PoolOp("MaxPoolGrad")
               .Input("orig_input", "T")
               .Input("orig_output", "T")
               .Input("grad", "T")
               .Output("output", "T")
               .SetShapeFn(shape_fns::UnchangedShape));
  AddOp(r, PoolOp("AvgPoolGrad")
               .Input("orig_input_shape", DataType::kInt32)
               .Input("grad", "T")
               .Output("output", "T")
               .SetShapeFn(
                   [](InferenceContext* c) { return ShapeFromInput(c, 0); }));
}

namespace ops {

Output Conv2D(const Scope& scope, const Input& input, const Input& filter,
              const std::vector<int64_t>& strides, const std::string& padding,
              const ops::Conv2DOptions& options) {
  std::vector<Output> in = AsOutputsOfOneType(scope, {input, filter});
  return BuildConv(
      std::move(
          NodeBuilder(scope, "Conv2D", "Conv2D").Input(in[0]).Input(in[1])),
      strides, padding, options);
}

Output Conv2DBackpropInput(const Scope& scope, const Input& input_sizes,
                           const Input& filter, const Input& out_backprop,
                           const std::vector<int64_t>& strides,
                           const std::string& padding,
                           const ops::Conv2DOptions& options) {
  std::vector<Output> in = AsOutputsOfOneType(scope, {filter, out_backprop});
  return BuildConv(
      std::move(NodeBuilder(scope, "Conv2DBackpropInput", "Conv2DBackpropInput")
                    .Input(AsOutput(scope, input_sizes))
                    .Input(in[0])
                    .Input(in[1])),
      strides, padding, options);
}

Output Conv2DBackpropFilter(const Scope& scope, const Input& input,
                            const Input& filter_sizes,
                            const Input& out_backprop,
                            const std::vector<int64_t>& strides,
                            const std::string& padding,
                            const ops::Conv2DOptions& options) {
  std::vector<Output> in = AsOutputsOfOneType(scope, {input, out_backprop});
  return BuildConv(std::move(NodeBuilder(scope, "Conv2DBackpropFilter",
                                         "Conv2DBackpropFilter")
                                 .Input(in[0])
                                 .Input(AsOutput(scope, filter_sizes))
                                 .Input(in[1])),
                   strides, padding, options);
}

Output MaxPool(const Scope& scope, const Input& value,
               const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides,
               const std::string& padding) {
  return BuildPool(std::move(NodeBuilder(scope, "MaxPool", "MaxPool")
                                 .Input(AsOutput(scope, value))),
                   ksize, strides, padding);
}

Output AvgPool(const Scope& scope, const Input& value,
               const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides,
               const std::string& padding) {
  return BuildPool(std::move(NodeBuilder(scope, "AvgPool", "AvgPool")
                                 .Input(AsOutput(scope, value))),
                   ksize, strides, padding);
}

Output MaxPoolGrad(const Scope& scope, const Input& orig_input,
                   const Input& orig_output, const Input& grad,
                   const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides,
                   const std::string& padding) {
  std::vector<Output> in =
      AsOutputsOfOneType(scope, {orig_input, orig_output, grad});
  return BuildPool(std::move(NodeBuilder(scope, "MaxPoolGrad", "MaxPoolGrad")
                                 .Input(in[0])
                                 .Input(in[1])
                                 .Input(in[2])),
                   ksize, strides, padding);
}

Output AvgPoolGrad(const Scope& scope, const Input& orig_input_shape,
                   const Input& grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides,
                   const std::string& padding) {
  return BuildPool(std::move(NodeBuilder(scope, "AvgPoolGrad", "AvgPoolGrad")
                                 .Input(AsOutput(scope, orig_input_shape))
                                 .Input(AsOutput(scope, grad))),
                   ksize, strides, padding);
}

}  // namespace ops
}  // namespace distflow
