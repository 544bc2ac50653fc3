#include "examples/fashion_mnist/model.h"

#include <algorithm>
#include <memory>

#include "distflow/distflow.h"

namespace fashion_mnist {

namespace df = distflow;
using df::Activation;

namespace {

df::layers::DenseOptions DenseNamed(const char* name, int64_t seed) {
  df::layers::DenseOptions o;
  o.name = name;
  o.seed = seed;
  return o;
}
df::layers::Conv2DOptions ConvNamed(const char* name, int64_t seed) {
  df::layers::Conv2DOptions o;
  o.name = name;
  o.seed = seed;
  return o;
}

// 784-256-128-10 with ReLUs: the MLP of the dataset's benchmark table.
df::Output Mlp(const df::Scope& s, const df::Output& images, int64_t seed) {
  auto hidden1 = df::layers::Dense(s, images, 256, Activation::kRelu,
                                   DenseNamed("hidden1", seed));
  auto hidden2 = df::layers::Dense(s, hidden1, 128, Activation::kRelu,
                                   DenseNamed("hidden2", seed + 1));
  return df::layers::Dense(s, hidden2, 10, Activation::kNone,
                           DenseNamed("logits", seed + 2));
}

// Two 5x5 convolutions (32 and 64 filters) each followed by 2x2 max pooling, a
// 1024-unit dense layer and dropout: TensorFlow's layers-tutorial network.
df::Output Cnn(const df::Scope& s, const df::Output& images,
               const df::Output& dropout_rate, int64_t seed) {
  auto x = df::ops::Reshape(s, images, {-1, 28, 28, 1});
  x = df::layers::Conv2D(s, x, 32, 5, Activation::kRelu,
                         ConvNamed("conv1", seed));
  x = df::layers::MaxPool2D(s, x, 2, 2);
  x = df::layers::Conv2D(s, x, 64, 5, Activation::kRelu,
                         ConvNamed("conv2", seed + 1));
  x = df::layers::MaxPool2D(s, x, 2, 2);
  x = df::layers::Flatten(s, x);
  x = df::layers::Dense(s, x, 1024, Activation::kRelu,
                        DenseNamed("dense", seed + 2));
  x = df::layers::Dropout(s, x, dropout_rate, seed + 3);
  return df::layers::Dense(s, x, 10, Activation::kNone,
                           DenseNamed("logits", seed + 4));
}

}  // namespace

absl::StatusOr<Model> BuildModel(const df::Scope& scope,
                                 const ModelOptions& options) {
  if (options.model != "mlp" && options.model != "cnn") {
    return absl::InvalidArgumentError("--model must be mlp or cnn, got '" +
                                      options.model + "'");
  }
  Model m;
  m.images = df::ops::Placeholder(scope.WithOpName("images"),
                                  df::DataType::kFloat, {-1, 784});
  m.labels = df::ops::Placeholder(scope.WithOpName("labels"),
                                  df::DataType::kInt32, {-1});
  m.dropout_rate = df::ops::Placeholder(scope.WithOpName("dropout_rate"),
                                        df::DataType::kFloat, {});
  m.logits = options.model == "mlp"
                 ? Mlp(scope, m.images, options.seed)
                 : Cnn(scope, m.images, m.dropout_rate, options.seed);
  m.loss = df::losses::SparseSoftmaxCrossEntropy(scope.WithOpName("loss"),
                                                 m.labels, m.logits);
  m.accuracy =
      df::metrics::Accuracy(scope.WithOpName("accuracy"), m.labels, m.logits);
  df::ops::Variable global_step = df::train::GetOrCreateGlobalStep(scope);
  m.global_step = global_step;
  auto adam = std::make_shared<df::train::AdamOptimizer>(options.learning_rate);
  m.optimizer = adam;
  absl::StatusOr<df::Operation> train;
  if (options.sync_replicas > 0) {
    m.sync = std::make_shared<df::train::SyncReplicasOptimizer>(
        adam.get(), options.sync_replicas);
    train = m.sync->Minimize(scope, m.loss, global_step);
  } else {
    train = adam->Minimize(scope, m.loss, global_step);
  }
  if (!train.ok()) return train.status();
  m.train = *train;
  m.init = df::ops::GlobalVariablesInitializer(scope);
  if (!scope.ok()) return scope.status();
  return m;
}

absl::StatusOr<double> Evaluate(df::ClientSession* session, const Model& model,
                                const df::data::LabeledImages& data) {
  const int64_t n = data.images.dim_size(0), batch = 500;
  double correct = 0;
  for (int64_t begin = 0; begin < n; begin += batch) {
    const int64_t end = std::min(n, begin + batch);
    auto out = session->Run({{model.images, data.images.Slice(begin, end)},
                             {model.labels, data.labels.Slice(begin, end)},
                             {model.dropout_rate, df::Tensor::Scalar(0.0f)}},
                            {model.accuracy});
    if (!out.ok()) return out.status();
    correct += (*out)[0].scalar<float>() * (end - begin);
  }
  return correct / n;
}

}  // namespace fashion_mnist
