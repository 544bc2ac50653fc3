// Training throughput of the Fashion-MNIST MLP and CNN: distflow against
// PyTorch (Debian's python3-torch, bench/peers/torch_train.py) with the same
// network, batch size, optimizer (Adam) and thread count, measured in the same
// run. Prints examples/sec for both and their ratio (distflow / PyTorch).
//
//   build/bench/train_bench [--threads N] [--batch_size B] [--models mlp,cnn]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "distflow/data.h"
#include "distflow/distflow.h"
#include "examples/fashion_mnist/model.h"

#ifndef DISTFLOW_BENCH_DIR
#error "DISTFLOW_BENCH_DIR must name the bench/ source folder"
#endif

namespace df = distflow;

namespace {

struct Config {
  int threads = 2;
  int64_t batch_size = 100;
  std::string models = "mlp,cnn";
};

// Steps measured (after warm-up) per model: enough for a second or more.
int64_t StepsFor(const std::string& model) { return model == "mlp" ? 600 : 40; }
int64_t WarmupFor(const std::string& model) { return model == "mlp" ? 60 : 5; }

absl::StatusOr<double> DistflowExamplesPerSec(
    const std::string& model, const Config& config,
    const df::data::LabeledImages& d) {
  df::Scope root = df::Scope::NewRootScope();
  fashion_mnist::ModelOptions options;
  options.model = model;
  auto m = fashion_mnist::BuildModel(root, options);
  if (!m.ok()) return m.status();
  df::SessionOptions session_options;
  session_options.intra_op_threads = config.threads;
  session_options.inter_op_threads = config.threads;
  auto session = df::ClientSession::Create(root, session_options);
  if (!session.ok()) return session.status();
  if (auto s = (*session)->RunTargets({m->init}); !s.ok()) return s;

  // The same 50 batches as the peer, cycled.
  const int64_t batches = 50, b = config.batch_size;
  const df::Tensor rate = df::Tensor::Scalar(options.dropout_rate);
  auto step = [&](int64_t i) {
    const int64_t k = i % batches;
    return (*session)
        ->Run({{m->images, d.images.Slice(k * b, (k + 1) * b)},
               {m->labels, d.labels.Slice(k * b, (k + 1) * b)},
               {m->dropout_rate, rate}},
              {}, {m->train})
        .status();
  };
  for (int64_t i = 0; i < WarmupFor(model); ++i) {
    if (auto s = step(i); !s.ok()) return s;
  }
  const auto start = std::chrono::steady_clock::now();
  const int64_t steps = StepsFor(model);
  for (int64_t i = 0; i < steps; ++i) {
    if (auto s = step(i); !s.ok()) return s;
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return steps * b / secs;
}

// Runs the PyTorch peer with OpenBLAS at `blas_threads` and returns its
// examples/sec, or an error if it could not run.
absl::StatusOr<double> TorchExamplesPerSec(const std::string& model,
                                           const Config& config,
                                           int blas_threads) {
  const std::string cmd = absl::StrCat(
      "OPENBLAS_NUM_THREADS=", blas_threads, " /usr/bin/python3 ",
      DISTFLOW_BENCH_DIR, "/peers/torch_train.py --model ", model,
      " --threads ", config.threads, " --batch_size ", config.batch_size,
      " --steps ", StepsFor(model), " --warmup ", WarmupFor(model), " 2>&1");
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError("cannot run: " + cmd);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) out.append(buf, n);
  const int rc = pclose(pipe);
  const size_t at = out.find("examples_per_sec=");
  if (rc != 0 || at == std::string::npos) {
    return absl::UnavailableError(
        absl::StrCat("the PyTorch peer failed (is python3-torch installed? run "
                     "scripts/install_deps.sh --bench): ",
                     cmd, "\n", out));
  }
  return std::strtod(out.c_str() + at + 17, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  Config config;
  CLI::App app{"Training examples/sec: distflow against PyTorch."};
  app.add_option("--threads", config.threads)->check(CLI::Range(1, 256));
  app.add_option("--batch_size", config.batch_size)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--models", config.models, "comma-separated: mlp,cnn");
  CLI11_PARSE(app, argc, argv);

  auto data = df::data::LoadFashionMnist(df::data::Split::kTrain);
  if (!data.ok()) {
    std::fprintf(stderr, "train_bench: %s\n", data.status().ToString().c_str());
    return 1;
  }
  std::printf("%-5s %6s %8s %14s %14s %7s\n", "model", "batch", "threads",
              "distflow ex/s", "pytorch ex/s", "ratio");
  bool ok = true;
  for (absl::string_view model : absl::StrSplit(config.models, ',')) {
    const std::string name(model);
    auto ours = DistflowExamplesPerSec(name, config, *data);
    // The peer at its best: OpenBLAS single-threaded (torch's own threads
    // drive the convolutions) or at the thread count.
    double theirs = 0;
    absl::Status peer_status;
    for (int blas : {1, config.threads}) {
      auto t = TorchExamplesPerSec(name, config, blas);
      if (t.ok()) {
        theirs = std::max(theirs, *t);
      } else {
        peer_status = t.status();
      }
    }
    if (!ours.ok()) {
      std::fprintf(stderr, "train_bench: %s: %s\n", name.c_str(),
                   ours.status().ToString().c_str());
      ok = false;
      continue;
    }
    if (theirs == 0) {
      std::fprintf(stderr, "train_bench: %s\n", peer_status.ToString().c_str());
      ok = false;
    }
    std::printf("%-5s %6lld %8d %14.0f %14.0f %7.2f\n", name.c_str(),
                static_cast<long long>(config.batch_size), config.threads,
                *ours, theirs, theirs > 0 ? *ours / theirs : 0.0);
  }
  return ok ? 0 : 1;
}
