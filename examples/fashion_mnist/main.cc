// Trains an MLP or a CNN on Fashion-MNIST in one process and reports the
// accuracy on the 10,000 test images:
//
//   build/bin/fashion_mnist --model=mlp
//   build/bin/fashion_mnist --model=cnn
//
// Progress (step, loss, examples/sec) goes to stderr; the last line on stdout
// is `test_accuracy=0.XXXX`.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "CLI/CLI.hpp"
#include "distflow/data.h"
#include "distflow/distflow.h"
#include "examples/fashion_mnist/model.h"

namespace df = distflow;

namespace {

struct Flags {
  fashion_mnist::ModelOptions model;
  int64_t epochs = 0;       // 0: the model's default
  int64_t train_steps = 0;  // overrides epochs when > 0
  int64_t batch_size = 100;
  int64_t log_every = 100;
  int threads = 0;  // 0: one per core
  std::string data_dir = df::data::kDefaultFashionMnistDir;
};

absl::StatusOr<double> Evaluate(df::ClientSession* session,
                                const fashion_mnist::Model& m,
                                const df::data::LabeledImages& test) {
  const int64_t n = test.images.dim_size(0), batch = 500;
  double correct = 0;
  for (int64_t begin = 0; begin < n; begin += batch) {
    const int64_t end = std::min(n, begin + batch);
    auto out = session->Run({{m.images, test.images.Slice(begin, end)},
                             {m.labels, test.labels.Slice(begin, end)},
                             {m.dropout_rate, df::Tensor::Scalar(0.0f)}},
                            {m.accuracy});
    if (!out.ok()) return out.status();
    correct += (*out)[0].scalar<float>() * (end - begin);
  }
  return correct / n;
}

absl::Status Train(const Flags& flags) {
  auto train_data =
      df::data::LoadFashionMnist(flags.data_dir, df::data::Split::kTrain);
  if (!train_data.ok()) return train_data.status();
  auto test_data =
      df::data::LoadFashionMnist(flags.data_dir, df::data::Split::kTest);
  if (!test_data.ok()) return test_data.status();

  df::Scope root = df::Scope::NewRootScope();
  auto model = fashion_mnist::BuildModel(root, flags.model);
  if (!model.ok()) return model.status();
  const fashion_mnist::Model& m = *model;

  df::SessionOptions options;
  if (flags.threads > 0) {
    options.intra_op_threads = flags.threads;
    options.inter_op_threads = flags.threads;
  }
  auto session = df::ClientSession::Create(root, options);
  if (!session.ok()) return session.status();
  if (auto s = (*session)->RunTargets({m.init}); !s.ok()) return s;

  const int64_t n = train_data->images.dim_size(0);
  const int64_t epochs =
      flags.epochs > 0 ? flags.epochs : (flags.model.model == "mlp" ? 30 : 12);
  const int64_t steps = flags.train_steps > 0 ? flags.train_steps
                                              : epochs * (n / flags.batch_size);
  auto dataset =
      df::data::Dataset::FromTensors({train_data->images, train_data->labels})
          .Shuffle(n, flags.model.seed)
          .Repeat()
          .Batch(flags.batch_size, /*drop_remainder=*/true)
          .Prefetch(2);
  auto it = dataset.MakeIterator();
  if (!it.ok()) return it.status();

  const df::Tensor dropout = df::Tensor::Scalar(flags.model.dropout_rate);
  auto last = std::chrono::steady_clock::now();
  for (int64_t step = 1; step <= steps; ++step) {
    auto batch = (*it)->GetNext();
    if (!batch.ok()) return batch.status();
    auto out = (*session)->Run({{m.images, (**batch)[0]},
                                {m.labels, (**batch)[1]},
                                {m.dropout_rate, dropout}},
                               {m.loss}, {m.train});
    if (!out.ok()) return out.status();
    if (step % flags.log_every == 0 || step == steps) {
      const auto now = std::chrono::steady_clock::now();
      const double secs = std::chrono::duration<double>(now - last).count();
      const int64_t done = step % flags.log_every == 0 ? flags.log_every
                                                       : step % flags.log_every;
      std::fprintf(stderr, "step %lld/%lld  loss %.4f  %.0f examples/sec\n",
                   static_cast<long long>(step), static_cast<long long>(steps),
                   (*out)[0].scalar<float>(), done * flags.batch_size / secs);
      last = now;
    }
  }
  auto accuracy = Evaluate(session->get(), m, *test_data);
  if (!accuracy.ok()) return accuracy.status();
  std::printf("test_accuracy=%.4f\n", *accuracy);
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"Trains a Fashion-MNIST classifier in one process."};
  app.add_option("--model", flags.model.model, "mlp or cnn")
      ->check(CLI::IsMember({"mlp", "cnn"}));
  app.add_option("--epochs", flags.epochs,
                 "passes over the 60,000 training images (default: mlp 30, "
                 "cnn 12)");
  app.add_option("--train_steps", flags.train_steps,
                 "steps to train (overrides --epochs)");
  app.add_option("--batch_size", flags.batch_size)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--learning_rate", flags.model.learning_rate, "Adam's");
  app.add_option("--seed", flags.model.seed);
  app.add_option("--threads", flags.threads, "threads (default: one per core)")
      ->check(CLI::Range(0, 256));
  app.add_option("--log_every", flags.log_every)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--data_dir", flags.data_dir);
  CLI11_PARSE(app, argc, argv);

  absl::Status s = Train(flags);
  if (!s.ok()) {
    std::cerr << "fashion_mnist: " << s << "\n";
    return 1;
  }
  return 0;
}
