// The two Fashion-MNIST networks of the examples and benchmarks, and the graph
// that trains and evaluates them.
#ifndef DISTFLOW_EXAMPLES_FASHION_MNIST_MODEL_H_
#define DISTFLOW_EXAMPLES_FASHION_MNIST_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "distflow/data.h"
#include "distflow/distflow.h"

namespace fashion_mnist {

struct ModelOptions {
  std::string model = "mlp";  // "mlp" (784-256-128-10) or "cnn"
  float learning_rate = 0.001f;
  float dropout_rate = 0.4f;  // cnn only, while training
  int64_t seed = 1;
  // 0: each step applies its own gradients (asynchronous between workers).
  // N > 0: a SyncReplicasOptimizer averages the gradients of N replicas per
  // step (synchronous training; give Model::sync's hook to the session).
  int sync_replicas = 0;
};

// The nodes a training loop feeds and runs.
struct Model {
  distflow::Output images;        // float32 [batch, 784], fed
  distflow::Output labels;        // int32 [batch], fed
  distflow::Output dropout_rate;  // float32 scalar, fed (0 to evaluate)
  distflow::Output logits;
  distflow::Output loss;      // mean cross entropy of the batch
  distflow::Output accuracy;  // fraction of the batch predicted right
  distflow::Output global_step;
  distflow::Operation train;  // one Adam step; increments global_step
  distflow::Operation init;   // initializes every variable
  // The optimizers the train op was built with (the sync optimizer's hook
  // needs them alive); sync is null unless options.sync_replicas > 0.
  std::shared_ptr<distflow::train::Optimizer> optimizer;
  std::shared_ptr<distflow::train::SyncReplicasOptimizer> sync;
};

// Builds the model in `scope` (its device function places the variables).
absl::StatusOr<Model> BuildModel(const distflow::Scope& scope,
                                 const ModelOptions& options);

// The fraction of `data` that `model` classifies right, run through `session`
// in batches of 500 without dropout.
absl::StatusOr<double> Evaluate(distflow::ClientSession* session,
                                const Model& model,
                                const distflow::data::LabeledImages& data);

}  // namespace fashion_mnist

#endif  // DISTFLOW_EXAMPLES_FASHION_MNIST_MODEL_H_
