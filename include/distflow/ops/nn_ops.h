// Op constructors for neural networks: activations, softmax, cross-entropy
// losses, 2-D convolution and pooling, and the ops computing their gradients.
// Each adds a node to the scope's graph and returns its output(s); errors are
// recorded in the scope (see distflow/scope.h).
//
// Images are NHWC ([batch, height, width, channels]) and filters HWIO
// ([height, width, in_channels, out_channels]), as in TensorFlow. Padding is
// "SAME" (output size ceil(in / stride); when the padding is odd the extra row
// or column goes at the bottom or right) or "VALID" (no padding).
#ifndef DISTFLOW_OPS_NN_OPS_H_
#define DISTFLOW_OPS_NN_OPS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "distflow/scope.h"
#include "distflow/tensor.h"
#include "distflow/types.h"

namespace distflow {
namespace ops {

// Elementwise max(x, 0), 1 / (1 + exp(-x)) and tanh(x) (float32 or float64).
Output Relu(const Scope& scope, const Input& features);
Output Sigmoid(const Scope& scope, const Input& x);
Output Tanh(const Scope& scope, const Input& x);
// Gradients of the activations given the incoming gradient `dy`:
// dy * (features > 0); dy * y * (1 - y) and dy * (1 - y^2), where y is the
// activation's output.
Output ReluGrad(const Scope& scope, const Input& dy, const Input& features);
Output SigmoidGrad(const Scope& scope, const Input& y, const Input& dy);
Output TanhGrad(const Scope& scope, const Input& y, const Input& dy);

// Softmax and log-softmax along the last axis of `logits` (rank >= 1),
// computed stably (the row maximum is subtracted first).
Output Softmax(const Scope& scope, const Input& logits);
Output LogSoftmax(const Scope& scope, const Input& logits);
// Their gradients with respect to the logits, given the forward output and
// the incoming gradient `dy` (same shapes): (dy - sum(dy * y)) * y for
// softmax, dy - exp(y) * sum(dy) for log-softmax (sums along the last axis).
Output SoftmaxGrad(const Scope& scope, const Input& y, const Input& dy);
Output LogSoftmaxGrad(const Scope& scope, const Input& y, const Input& dy);

struct CrossEntropyOutputs {
  Output loss;      // [N]: the cross-entropy of each row
  Output backprop;  // [N, C]: d loss[i] / d logits[i, :]
};
// Cross-entropy between softmax(logits) ([N, C]) and the class `labels` ([N],
// int32 or int64, each in [0, C)). A label out of range fails the step with
// INVALID_ARGUMENT naming the label, its row and C.
CrossEntropyOutputs SparseSoftmaxCrossEntropyWithLogits(const Scope& scope,
                                                        const Input& logits,
                                                        const Input& labels);
// Cross-entropy between softmax(logits) and the distributions `labels` (both
// [N, C]). backprop is softmax(logits) - labels: the gradient when each row of
// labels sums to 1, as for probability distributions.
CrossEntropyOutputs SoftmaxCrossEntropyWithLogits(const Scope& scope,
                                                  const Input& logits,
                                                  const Input& labels);
// backprop [N, C] times `dloss` [N] broadcast over the classes: the gradient of
// a cross-entropy loss with respect to the logits.
Output CrossEntropyGrad(const Scope& scope, const Input& backprop,
                        const Input& dloss);

struct Conv2DOptions {
  // [1, dh, dw, 1]: the filter's taps are dh rows and dw columns apart.
  std::vector<int64_t> dilations = {1, 1, 1, 1};
};
// The 2-D convolution (cross-correlation, as in TensorFlow) of `input`
// [N, H, W, C] by `filter` [KH, KW, C, O]; `strides` is [1, sh, sw, 1] and
// `padding` "SAME" or "VALID". Float32 only.
Output Conv2D(const Scope& scope, const Input& input, const Input& filter,
              const std::vector<int64_t>& strides, const std::string& padding,
              const Conv2DOptions& options = Conv2DOptions());
// The gradient of Conv2D with respect to its input (of shape `input_sizes`, an
// int32 vector of 4) given `out_backprop`, the gradient of its output.
Output Conv2DBackpropInput(const Scope& scope, const Input& input_sizes,
                           const Input& filter, const Input& out_backprop,
                           const std::vector<int64_t>& strides,
                           const std::string& padding,
                           const Conv2DOptions& options = Conv2DOptions());
// The gradient of Conv2D with respect to its filter (of shape `filter_sizes`).
Output Conv2DBackpropFilter(const Scope& scope, const Input& input,
                            const Input& filter_sizes,
                            const Input& out_backprop,
                            const std::vector<int64_t>& strides,
                            const std::string& padding,
                            const Conv2DOptions& options = Conv2DOptions());

// Max and average pooling of `value` [N, H, W, C] over windows `ksize`
// [1, kh, kw, 1] moved by `strides` [1, sh, sw, 1]. Average pooling with SAME
// padding divides by the number of elements inside the input. Float32 only.
Output MaxPool(const Scope& scope, const Input& value,
               const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides, const std::string& padding);
Output AvgPool(const Scope& scope, const Input& value,
               const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides, const std::string& padding);
// The gradient of MaxPool with respect to its input: each window's gradient
// goes to the window's maximum element.
Output MaxPoolGrad(const Scope& scope, const Input& orig_input,
                   const Input& orig_output, const Input& grad,
                   const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides,
                   const std::string& padding);
// The gradient of AvgPool with respect to its input (of shape
// `orig_input_shape`, an int32 vector of 4).
Output AvgPoolGrad(const Scope& scope, const Input& orig_input_shape,
                   const Input& grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides,
                   const std::string& padding);

}  // namespace ops
}  // namespace distflow

#endif  // DISTFLOW_OPS_NN_OPS_H_
