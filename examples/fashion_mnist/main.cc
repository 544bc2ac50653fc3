// Trains an MLP or a CNN on Fashion-MNIST and reports the accuracy on the
// 10,000 test images, in one process:
//
//   build/bin/fashion_mnist --model=mlp
//   build/bin/fashion_mnist --model=cnn
//
// or as one task of a cluster (see distributed.h), every task the same binary:
//
//   build/bin/fashion_mnist --job_name=ps --task_index=0
//       --ps_hosts=localhost:2222 --worker_hosts=localhost:2223,localhost:2224
//   build/bin/fashion_mnist --job_name=worker --task_index=0 (and 1), with
//       the same --ps_hosts and --worker_hosts
//
// Progress (step, loss, examples/sec) goes to stderr; the last line on stdout
// is `test_accuracy=0.XXXX`.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "CLI/CLI.hpp"
#include "distflow/data.h"
#include "distflow/distflow.h"
#include "examples/fashion_mnist/distributed.h"
#include "examples/fashion_mnist/flags.h"
#include "examples/fashion_mnist/model.h"

namespace df = distflow;

namespace {

using fashion_mnist::Flags;

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
  const int64_t steps = flags.StepsFor(n);
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
  auto accuracy = fashion_mnist::Evaluate(session->get(), m, *test_data);
  if (!accuracy.ok()) return accuracy.status();
  std::printf("test_accuracy=%.4f\n", *accuracy);
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  // The cluster flags are parsed by ParseTaskConfig; CLI11 only lists them.
  std::string job_name, ps_hosts, worker_hosts;
  int task_index = 0;
  CLI::App app{
      "Trains a Fashion-MNIST classifier in one process, or as one task of a "
      "cluster (with --job_name, --task_index, --ps_hosts, --worker_hosts or "
      "the TF_CONFIG environment variable)."};
  app.add_option("--model", flags.model.model, "mlp or cnn")
      ->check(CLI::IsMember({"mlp", "cnn"}));
  app.add_option("--epochs", flags.epochs,
                 "passes over the 60,000 training images (default: mlp 30, "
                 "cnn 12)");
  app.add_option("--train_steps", flags.train_steps,
                 "steps to train (overrides --epochs); global steps when "
                 "distributed");
  app.add_option("--batch_size", flags.batch_size)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--learning_rate", flags.model.learning_rate, "Adam's");
  app.add_option("--seed", flags.model.seed);
  app.add_option("--threads", flags.threads,
                 "threads of the session or the task's server (default: one "
                 "per core)")
      ->check(CLI::Range(0, 256));
  app.add_option("--log_every", flags.log_every)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--data_dir", flags.data_dir);
  app.add_option("--job_name", job_name, "distributed: ps or worker");
  app.add_option("--task_index", task_index, "distributed: index in its job");
  app.add_option("--ps_hosts", ps_hosts,
                 "distributed: comma-separated host:port of the ps tasks");
  app.add_option("--worker_hosts", worker_hosts,
                 "distributed: comma-separated host:port of the workers");
  // Under Slurm's srun the cluster comes from Slurm's variables.
  int ps_count = -1, port = 0;
  app.add_option("--ps_count", ps_count,
                 "distributed under srun: the first ps_count ranks are ps "
                 "tasks, the rest workers");
  app.add_option("--port", port,
                 "distributed under srun: the port of each node's first task "
                 "(default 2222)");
  app.add_option("--steps_to_validate", flags.steps_to_validate,
                 "distributed: the chief evaluates on the test set every this "
                 "many global steps (0: only at the end)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--issync", flags.issync,
                 "distributed: 1 averages every worker's gradients in each "
                 "step (synchronous), 0 applies each as it comes");
  app.add_option("--checkpoint_dir", flags.checkpoint_dir,
                 "distributed: the chief resumes from the latest checkpoint "
                 "here and saves one at the end (a directory every ps task "
                 "and the chief can reach)");
  app.add_option("--save_checkpoint_steps", flags.save_checkpoint_steps,
                 "distributed: save every this many global steps (default: "
                 "every 10 minutes)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  CLI11_PARSE(app, argc, argv);

  absl::Status s;
  const char* tf_config = std::getenv("TF_CONFIG");
  if (!job_name.empty() || !ps_hosts.empty() || !worker_hosts.empty() ||
      ps_count >= 0 || (tf_config != nullptr && *tf_config != '\0')) {
    auto task = df::ParseTaskConfig(argc, argv);
    s = task.ok() ? fashion_mnist::RunDistributedTask(*task, flags)
                  : task.status();
  } else {
    s = Train(flags);
  }
  if (!s.ok()) {
    std::cerr << "fashion_mnist: " << s << "\n";
    return 1;
  }
  return 0;
}
