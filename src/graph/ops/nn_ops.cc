// Activations, softmax and cross-entropy losses, with the ops computing their
// gradients.
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/node_builder.h"
#include "graph/ops/op_families.h"
#include "graph/shape_inference.h"

namespace distflow {
namespace {

absl::Status AtLeastVectorShape(InferenceContext* c) {
  if (!c->input(0).unknown_rank() && c->input(0).dims() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("logits must have rank >= 1 (classes along the last "
                     "axis), got shape ",
                     c->input(0).DebugString()));
  }
  c->set_output(0, c->input(0));
  return absl::OkStatus();
}

// Output 0 has the shape of inputs 0 and 1, which must agree.
absl::Status SameShapeBinary(InferenceContext* c) {
  auto merged = c->input(0).MergeWith(c->input(1));
  if (!merged.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inputs must have the same shape, got ", c->input(0).DebugString(),
        " and ", c->input(1).DebugString()));
  }
  c->set_output(0, *merged);
  return absl::OkStatus();
}

// The batch size of logits [N, C] merged with that of labels (rank
// `label_rank`), or an error naming both shapes.
absl::StatusOr<PartialTensorShape> XentLogitsShape(InferenceContext* c,
                                                   int label_rank) {
  DF_RETURN_IF_ERROR(c->WithRank(0, 2));
  DF_RETURN_IF_ERROR(c->WithRank(1, label_rank));
  PartialTensorShape logits = c->input(0).unknown_rank()
                                  ? PartialTensorShape::UnknownDims(2)
                                  : c->input(0);
  const PartialTensorShape& labels = c->input(1);
  if (labels.unknown_rank()) return logits;
  std::vector<int64_t> dims = logits.dim_sizes();
  for (int d = 0; d < label_rank; ++d) {
    const int64_t a = dims[d], b = labels.dim_size(d);
    if (a >= 0 && b >= 0 && a != b) {
      return absl::InvalidArgumentError(
          absl::StrCat("logits ", logits.DebugString(), " and labels ",
                       labels.DebugString(), " disagree in dimension ", d));
    }
    if (a < 0) dims[d] = b;
  }
  return PartialTensorShape::FromDims(dims);
}

absl::Status XentShape(InferenceContext* c, int label_rank) {
  DF_ASSIGN_OR_RETURN(PartialTensorShape logits,
                      XentLogitsShape(c, label_rank));
  c->set_output(0, PartialTensorShape({logits.dim_size(0)}));
  c->set_output(1, logits);
  return absl::OkStatus();
}

absl::Status CrossEntropyGradShape(InferenceContext* c) {
  DF_RETURN_IF_ERROR(c->WithRank(0, 2));
  DF_RETURN_IF_ERROR(c->WithRank(1, 1));
  const PartialTensorShape& b = c->input(0);
  const PartialTensorShape& g = c->input(1);
  if (!b.unknown_rank() && !g.unknown_rank() && b.dim_size(0) >= 0 &&
      g.dim_size(0) >= 0 && b.dim_size(0) != g.dim_size(0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("backprop ", b.DebugString(), " and loss gradient ",
                     g.DebugString(), " have different batch sizes"));
  }
  c->set_output(0, b.unknown_rank() ? PartialTensorShape::UnknownDims(2) : b);
  return absl::OkStatus();
}

Output Unary(const Scope& scope, const char* op, const Input& x) {
  return NodeBuilder(scope, op, op)
      .Input(AsOutput(scope, x))
      .Finalize()
      .output(0);
}

Output Binary(const Scope& scope, const char* op, const Input& a,
              const Input& b) {
  std::vector<Output> in = AsOutputsOfOneType(scope, {a, b});
  return NodeBuilder(scope, op, op)
      .Input(in[0])
      .Input(in[1])
      .Finalize()
      .output(0);
}

ops::CrossEntropyOutputs Xent(const Scope& scope, const char* op,
                              const Output& logits, const Output& labels) {
  Operation node =
      NodeBuilder(scope, op, op).Input(logits).Input(labels).Finalize();
  if (!node.valid()) return {};
  return {node.output(0), node.output(1)};
}

}  // namespace

void RegisterNnOps(OpRegistry* r) {
  for (const char* name : {"Relu", "Sigmoid", "Tanh"}) {
    AddOp(r, OpDefBuilder(name)
                 .Input("x", "T")
                 .Output("y", "T")
                 .TypeAttr("T", kFloatingTypes)
                 .SetShapeFn(shape_fns::UnchangedShape));
  }
  AddOp(r, OpDefBuilder("ReluGrad")
               .Input("gradients", "T")
               .Input("features", "T")
               .Output("backprops", "T")
               .TypeAttr("T", kFloatingTypes)
               .SetShapeFn(SameShapeBinary));
  for (const char* name :
       {"SigmoidGrad", "TanhGrad", "SoftmaxGrad", "LogSoftmaxGrad"}) {
    AddOp(r, OpDefBuilder(name)
                 .Input("y", "T")
                 .Input("dy", "T")
                 .Output("z", "T")
                 .TypeAttr("T", kFloatingTypes)
                 .SetShapeFn(SameShapeBinary));
  }
  for (const char* name : {"Softmax", "LogSoftmax"}) {
    AddOp(r, OpDefBuilder(name)
                 .Input("logits", "T")
                 .Output("y", "T")
                 .TypeAttr("T", kFloatingTypes)
                 .Summary("Along the last axis.")
                 .SetShapeFn(AtLeastVectorShape));
  }
  AddOp(r,
        OpDefBuilder("SparseSoftmaxCrossEntropyWithLogits")
            .Input("features", "T")
            .Input("labels", "Tlabels")
            .Output("loss", "T")
            .Output("backprop", "T")
            .TypeAttr("T", kFloatingTypes)
            .TypeAttr("Tlabels", {DataType::kInt32, DataType::kInt64})
            .SetShapeFn([](InferenceContext* c) { return XentShape(c, 1); }));
  AddOp(r,
        OpDefBuilder("SoftmaxCrossEntropyWithLogits")
            .Input("features", "T")
            .Input("labels", "T")
            .Output("loss", "T")
            .Output("backprop", "T")
            .TypeAttr("T", kFloatingTypes)
            .SetShapeFn([](InferenceContext* c) { return XentShape(c, 2); }));
  AddOp(r, OpDefBuilder("CrossEntropyGrad")
               .Input("backprop", "T")
               .Input("dloss", "T")
               .Output("dlogits", "T")
               .TypeAttr("T", kFloatingTypes)
               .Summary("backprop [N, C] * dloss [N] broadcast over classes.")
               .SetShapeFn(CrossEntropyGradShape));
}

namespace ops {

Output Relu(const Scope& scope, const Input& features) {
  return Unary(scope, "Relu", features);
}
Output Sigmoid(const Scope& scope, const Input& x) {
  return Unary(scope, "Sigmoid", x);
}
Output Tanh(const Scope& scope, const Input& x) {
  return Unary(scope, "Tanh", x);
}
Output ReluGrad(const Scope& scope, const Input& dy, const Input& features) {
  return Binary(scope, "ReluGrad", dy, features);
}
Output SigmoidGrad(const Scope& scope, const Input& y, const Input& dy) {
  return Binary(scope, "SigmoidGrad", y, dy);
}
Output TanhGrad(const Scope& scope, const Input& y, const Input& dy) {
  return Binary(scope, "TanhGrad", y, dy);
}
Output Softmax(const Scope& scope, const Input& logits) {
  return Unary(scope, "Softmax", logits);
}
Output LogSoftmax(const Scope& scope, const Input& logits) {
  return Unary(scope, "LogSoftmax", logits);
}
Output SoftmaxGrad(const Scope& scope, const Input& y, const Input& dy) {
  return Binary(scope, "SoftmaxGrad", y, dy);
}
Output LogSoftmaxGrad(const Scope& scope, const Input& y, const Input& dy) {
  return Binary(scope, "LogSoftmaxGrad", y, dy);
}

CrossEntropyOutputs SparseSoftmaxCrossEntropyWithLogits(const Scope& scope,
                                                        const Input& logits,
                                                        const Input& labels) {
  return Xent(scope, "SparseSoftmaxCrossEntropyWithLogits",
              AsOutput(scope, logits), AsOutput(scope, labels));
}
CrossEntropyOutputs SoftmaxCrossEntropyWithLogits(const Scope& scope,
                                                  const Input& logits,
                                                  const Input& labels) {
  std::vector<Output> in = AsOutputsOfOneType(scope, {logits, labels});
  return Xent(scope, "SoftmaxCrossEntropyWithLogits", in[0], in[1]);
}
Output CrossEntropyGrad(const Scope& scope, const Input& backprop,
                        const Input& dloss) {
  return Binary(scope, "CrossEntropyGrad", backprop, dloss);
}

}  // namespace ops
}  // namespace distflow
