// Layers, losses and metrics: the building blocks of a model, made of ops.
//
// Each layer creates its variables (named after the layer: "dense/kernel",
// "dense/bias") in the scope it is given, so a replica device setter places
// them on ps tasks like any variable, and returns its output. Kernels start
// Glorot-uniform and biases zero, as in TensorFlow; `seed` makes the start
// reproducible (0: a different start each run).
#ifndef DISTFLOW_LAYERS_H_
#define DISTFLOW_LAYERS_H_

#include <cstdint>
#include <string>

#include "distflow/ops.h"
#include "distflow/scope.h"

namespace distflow {

enum class Activation { kNone, kRelu, kSigmoid, kTanh, kSoftmax };

// `x` through `activation`.
Output Activate(const Scope& scope, const Output& x, Activation activation);

namespace layers {

struct DenseOptions {
  bool use_bias = true;
  int64_t seed = 0;
  std::string name = "dense";
};
// activation(x kernel + bias) for x [batch, in] and kernel [in, units].
Output Dense(const Scope& scope, const Input& x, int64_t units,
             Activation activation = Activation::kNone,
             const DenseOptions& options = DenseOptions());

struct Conv2DOptions {
  int64_t strides = 1;
  std::string padding = "SAME";  // or "VALID"
  bool use_bias = true;
  int64_t seed = 0;
  std::string name = "conv2d";
};
// activation(conv(x, kernel) + bias) for x [batch, height, width, channels]
// (NHWC) and kernel [kernel_size, kernel_size, channels, filters].
Output Conv2D(const Scope& scope, const Input& x, int64_t filters,
              int64_t kernel_size, Activation activation = Activation::kNone,
              const Conv2DOptions& options = Conv2DOptions());

// Max over pool_size x pool_size windows moved by `strides` (NHWC).
Output MaxPool2D(const Scope& scope, const Input& x, int64_t pool_size,
                 int64_t strides, const std::string& padding = "VALID");

// [batch, d1, d2, ...] -> [batch, d1 * d2 * ...].
Output Flatten(const Scope& scope, const Input& x);

// Zeroes each element with probability `rate` and scales the rest by
// 1 / (1 - rate). `rate` may be an Output (a placeholder fed 0 at evaluation
// time turns dropout off).
Output Dropout(const Scope& scope, const Input& x, const Input& rate,
               int64_t seed = 0);

struct EmbeddingOptions {
  int64_t seed = 0;
  std::string name = "embedding";
};
// Rows `ids` (int32 or int64, any shape) of a [vocabulary, dim] table: the
// result has shape ids.shape + [dim]. Its gradient is sparse: training updates
// only the rows a batch looked up.
Output Embedding(const Scope& scope, const Input& ids, int64_t vocabulary,
                 int64_t dim, const EmbeddingOptions& options = {});

}  // namespace layers

namespace losses {

// Mean over the batch of the softmax cross entropy between integer class
// labels [batch] and logits [batch, classes].
Output SparseSoftmaxCrossEntropy(const Scope& scope, const Input& labels,
                                 const Input& logits);
// As above with one-hot (or probability) labels [batch, classes].
Output SoftmaxCrossEntropy(const Scope& scope, const Input& labels,
                           const Input& logits);
// Mean of (labels - predictions)^2 over every element.
Output MeanSquaredError(const Scope& scope, const Input& labels,
                        const Input& predictions);

}  // namespace losses

namespace metrics {

// The fraction (float32 scalar) of rows whose largest logit is at the integer
// label.
Output Accuracy(const Scope& scope, const Input& labels, const Input& logits);

}  // namespace metrics
}  // namespace distflow

#endif  // DISTFLOW_LAYERS_H_
