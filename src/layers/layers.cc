// Layers: ops and variables grouped under the layer's name.
#include "distflow/layers.h"

#include "absl/strings/str_cat.h"
#include "distflow/ops/nn_ops.h"
#include "distflow/ops/random_ops.h"
#include "graph/node_builder.h"

namespace distflow {

Output Activate(const Scope& scope, const Output& x, Activation activation) {
  switch (activation) {
    case Activation::kNone:
      return x;
    case Activation::kRelu:
      return ops::Relu(scope, x);
    case Activation::kSigmoid:
      return ops::Sigmoid(scope, x);
    case Activation::kTanh:
      return ops::Tanh(scope, x);
    case Activation::kSoftmax:
      return ops::Softmax(scope, x);
  }
  return x;
}

namespace layers {
namespace {

// The size of the last dimension of `x`, which a layer's weights are sized by;
// records an error naming the layer if it is unknown.
int64_t LastDim(const Scope& scope, const Output& x, const std::string& layer) {
  const PartialTensorShape shape = x.shape();
  const int64_t d = shape.unknown_rank() || shape.dims() == 0
                        ? -1
                        : shape.dim_size(shape.dims() - 1);
  if (d < 0) {
    scope.UpdateStatus(absl::InvalidArgumentError(
        absl::StrCat("layer ", layer, ": the last dimension of its input ",
                     x.name(), " must be known to size the weights, got shape ",
                     shape.DebugString())));
  }
  return d;
}

// The layer's weights: Glorot-uniform kernel and zero bias.
ops::Variable Kernel(const Scope& s, const TensorShape& shape, int64_t seed) {
  return ops::Variable(
      s.WithOpName("kernel"),
      ops::GlorotUniform(s.WithOpName("kernel_init"), shape, seed));
}
ops::Variable Bias(const Scope& s, int64_t units) {
  return ops::Variable(
      s.WithOpName("bias"),
      ops::Zeros(s.WithOpName("bias_init"), TensorShape({units})));
}

}  // namespace

Output Dense(const Scope& scope, const Input& x, int64_t units,
             Activation activation, const DenseOptions& options) {
  Scope s = scope.NewSubScope(options.name);
  Output in = AsOutput(s, x);
  if (!s.ok()) return Output();
  const int64_t in_dim = LastDim(s, in, options.name);
  if (in_dim < 0) return Output();
  ops::Variable kernel = Kernel(s, TensorShape({in_dim, units}), options.seed);
  Output y = ops::MatMul(s, in, kernel);
  if (options.use_bias) y = ops::BiasAdd(s, y, Bias(s, units));
  return Activate(s, y, activation);
}

Output Conv2D(const Scope& scope, const Input& x, int64_t filters,
              int64_t kernel_size, Activation activation,
              const Conv2DOptions& options) {
  Scope s = scope.NewSubScope(options.name);
  Output in = AsOutput(s, x);
  if (!s.ok()) return Output();
  const int64_t channels = LastDim(s, in, options.name);
  if (channels < 0) return Output();
  ops::Variable kernel =
      Kernel(s, TensorShape({kernel_size, kernel_size, channels, filters}),
             options.seed);
  Output y = ops::Conv2D(
      s, in, kernel, {1, options.strides, options.strides, 1}, options.padding);
  if (options.use_bias) y = ops::BiasAdd(s, y, Bias(s, filters));
  return Activate(s, y, activation);
}

Output MaxPool2D(const Scope& scope, const Input& x, int64_t pool_size,
                 int64_t strides, const std::string& padding) {
  return ops::MaxPool(scope, x, {1, pool_size, pool_size, 1},
                      {1, strides, strides, 1}, padding);
}

Output Flatten(const Scope& scope, const Input& x) {
  Output in = AsOutput(scope, x);
  if (!scope.ok()) return Output();
  const PartialTensorShape shape = in.shape();
  int64_t rest = 1;
  for (int d = 1; !shape.unknown_rank() && d < shape.dims(); ++d) {
    if (shape.dim_size(d) < 0) {
      rest = -1;
      break;
    }
    rest *= shape.dim_size(d);
  }
  if (shape.unknown_rank() || rest < 0) {
    scope.UpdateStatus(absl::InvalidArgumentError(absl::StrCat(
        "Flatten: every dimension of ", in.name(),
        " but the first must be known, got shape ", shape.DebugString())));
    return Output();
  }
  return ops::Reshape(scope, in, Input({int64_t{-1}, rest}));
}

Output Dropout(const Scope& scope, const Input& x, const Input& rate,
               int64_t seed) {
  return ops::Dropout(scope, x, rate, seed);
}

Output Embedding(const Scope& scope, const Input& ids, int64_t vocabulary,
                 int64_t dim, const EmbeddingOptions& options) {
  Scope s = scope.NewSubScope(options.name);
  ops::Variable table(
      s.WithOpName("embeddings"),
      ops::RandomUniformInitializer(s.WithOpName("embeddings_init"),
                                    TensorShape({vocabulary, dim}), -0.05, 0.05,
                                    options.seed));
  // The lookup runs beside the table, so that only the rows looked up leave
  // the task holding it.
  return ops::Gather(s.ColocateWith(table.handle().op()), table, ids);
}

}  // namespace layers
}  // namespace distflow
