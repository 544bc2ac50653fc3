// Gradients of the neural-network ops: activations, softmax, cross-entropy,
// convolution and pooling. Each uses a dedicated gradient op (ReluGrad,
// Conv2DBackpropInput, ...) computing the whole gradient in one kernel.
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/attr_value.h"
#include "graph/gradients/grad_registry.h"

namespace distflow {
namespace {

// The window attributes that a convolution's or pooling's gradient ops
// repeat.
struct WindowAttrs {
  std::vector<int64_t> ksize, strides, dilations;
  std::string padding;
};

absl::Status ReadWindowAttrs(const Operation& op, bool conv, WindowAttrs* w) {
  const AttrMap& attrs = op.node()->attrs();
  DF_RETURN_IF_ERROR(GetAttr(attrs, "strides", &w->strides));
  DF_RETURN_IF_ERROR(GetAttr(attrs, "padding", &w->padding));
  if (conv) return GetAttr(attrs, "dilations", &w->dilations);
  return GetAttr(attrs, "ksize", &w->ksize);
}

absl::Status ReluGradFn(const Scope& scope, const Operation& op,
                        const std::vector<Output>& grads,
                        std::vector<Gradient>* dx) {
  (*dx)[0] = ops::ReluGrad(scope, grads[0], OpInput(op, 0));
  return absl::OkStatus();
}

absl::Status SigmoidGradFn(const Scope& scope, const Operation& op,
                           const std::vector<Output>& grads,
                           std::vector<Gradient>* dx) {
  (*dx)[0] = ops::SigmoidGrad(scope, op.output(0), grads[0]);
  return absl::OkStatus();
}

absl::Status TanhGradFn(const Scope& scope, const Operation& op,
                        const std::vector<Output>& grads,
                        std::vector<Gradient>* dx) {
  (*dx)[0] = ops::TanhGrad(scope, op.output(0), grads[0]);
  return absl::OkStatus();
}

absl::Status SoftmaxGradFn(const Scope& scope, const Operation& op,
                           const std::vector<Output>& grads,
                           std::vector<Gradient>* dx) {
  (*dx)[0] = ops::SoftmaxGrad(scope, op.output(0), grads[0]);
  return absl::OkStatus();
}

absl::Status LogSoftmaxGradFn(const Scope& scope, const Operation& op,
                              const std::vector<Output>& grads,
                              std::vector<Gradient>* dx) {
  (*dx)[0] = ops::LogSoftmaxGrad(scope, op.output(0), grads[0]);
  return absl::OkStatus();
}

// d logits = backprop * d loss (broadcast over the classes). The backprop
// output is itself a gradient: no gradient flows back through it, and the
// integer labels have none.
absl::Status SparseXentGradFn(const Scope& scope, const Operation& op,
                              const std::vector<Output>& grads,
                              std::vector<Gradient>* dx) {
  (*dx)[0] = ops::CrossEntropyGrad(scope, op.output(1), grads[0]);
  return absl::OkStatus();
}

// As the sparse case for the logits; the labels (a distribution p) get
// -log_softmax(logits) * d loss, since loss = -sum(p * log_softmax(logits)).
absl::Status XentGradFn(const Scope& scope, const Operation& op,
                        const std::vector<Output>& grads,
                        std::vector<Gradient>* dx) {
  (*dx)[0] = ops::CrossEntropyGrad(scope, op.output(1), grads[0]);
  Output log_p = ops::LogSoftmax(scope, OpInput(op, 0));
  (*dx)[1] =
      ops::Mul(scope, ops::CrossEntropyGrad(scope, log_p, grads[0]), -1.0);
  return absl::OkStatus();
}

absl::Status Conv2DGradFn(const Scope& scope, const Operation& op,
                          const std::vector<Output>& grads,
                          std::vector<Gradient>* dx) {
  WindowAttrs w;
  DF_RETURN_IF_ERROR(ReadWindowAttrs(op, /*conv=*/true, &w));
  ops::Conv2DOptions options;
  options.dilations = w.dilations;
  const Output input = OpInput(op, 0), filter = OpInput(op, 1);
  (*dx)[0] = ops::Conv2DBackpropInput(scope, ops::Shape(scope, input), filter,
                                      grads[0], w.strides, w.padding, options);
  (*dx)[1] = ops::Conv2DBackpropFilter(scope, input, ops::Shape(scope, filter),
                                       grads[0], w.strides, w.padding, options);
  return absl::OkStatus();
}

absl::Status MaxPoolGradFn(const Scope& scope, const Operation& op,
                           const std::vector<Output>& grads,
                           std::vector<Gradient>* dx) {
  WindowAttrs w;
  DF_RETURN_IF_ERROR(ReadWindowAttrs(op, /*conv=*/false, &w));
  (*dx)[0] = ops::MaxPoolGrad(scope, OpInput(op, 0), op.output(0), grads[0],
                              w.ksize, w.strides, w.padding);
  return absl::OkStatus();
}

absl::Status AvgPoolGradFn(const Scope& scope, const Operation& op,
                           const std::vector<Output>& grads,
                           std::vector<Gradient>* dx) {
  WindowAttrs w;
  DF_RETURN_IF_ERROR(ReadWindowAttrs(op, /*conv=*/false, &w));
  (*dx)[0] = ops::AvgPoolGrad(scope, ops::Shape(scope, OpInput(op, 0)),
                              grads[0], w.ksize, w.strides, w.padding);
  return absl::OkStatus();
}

}  // namespace

void RegisterNnGradients(GradRegistry* r) {
  AddGrad(r, "Relu", ReluGradFn);
  AddGrad(r, "Sigmoid", SigmoidGradFn);
  AddGrad(r, "Tanh", TanhGradFn);
  AddGrad(r, "Softmax", SoftmaxGradFn);
  AddGrad(r, "LogSoftmax", LogSoftmaxGradFn);
  AddGrad(r, "SparseSoftmaxCrossEntropyWithLogits", SparseXentGradFn);
  AddGrad(r, "SoftmaxCrossEntropyWithLogits", XentGradFn);
  AddGrad(r, "Conv2D", Conv2DGradFn);
  AddGrad(r, "MaxPool", MaxPoolGradFn);
  AddGrad(r, "AvgPool", AvgPoolGradFn);
}

}  // namespace distflow
