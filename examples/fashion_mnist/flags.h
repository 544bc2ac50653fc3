// The command line of build/bin/fashion_mnist, shared by its single-process
// and distributed modes.
#ifndef DISTFLOW_EXAMPLES_FASHION_MNIST_FLAGS_H_
#define DISTFLOW_EXAMPLES_FASHION_MNIST_FLAGS_H_

#include <cstdint>
#include <string>

#include "distflow/data.h"
#include "examples/fashion_mnist/model.h"

namespace fashion_mnist {

struct Flags {
  ModelOptions model;
  int64_t epochs = 0;       // 0: the model's default
  int64_t train_steps = 0;  // overrides epochs when > 0; global steps
  int64_t batch_size = 100;
  int64_t log_every = 100;
  // Distributed: the chief evaluates on the test set every this many global
  // steps (0: only at the end).
  int64_t steps_to_validate = 0;
  // Distributed: average the gradients of all workers in each step
  // (synchronous training) instead of applying each worker's as it comes.
  bool issync = false;
  // Distributed: the chief restores the latest checkpoint of this directory
  // when it starts and saves checkpoints there ("": no checkpoints).
  std::string checkpoint_dir;
  // Distributed: the chief saves every this many global steps (0: every 10
  // minutes), and at the end.
  int64_t save_checkpoint_steps = 0;
  int threads = 0;  // 0: one per core
  std::string data_dir = distflow::data::kDefaultFashionMnistDir;

  // The steps to train: --train_steps, or --epochs passes over `examples`
  // training images (default: mlp 30, cnn 12).
  int64_t StepsFor(int64_t examples) const {
    if (train_steps > 0) return train_steps;
    const int64_t passes =
        epochs > 0 ? epochs : (model.model == "mlp" ? 30 : 12);
    return passes * (examples / batch_size);
  }
};

}  // namespace fashion_mnist

#endif  // DISTFLOW_EXAMPLES_FASHION_MNIST_FLAGS_H_
