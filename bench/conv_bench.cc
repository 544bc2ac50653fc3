// Forward and backward of the Fashion-MNIST CNN's convolution and pooling
// layers ([N,28,28,1] * [5,5,1,32] SAME, 2x2/2 max pool, * [5,5,32,64] SAME,
// 2x2/2 max pool), one session step each, against PyTorch doing the same
// (bench/conv_peer.py) at the same thread count, measured in the same run.
//
// Usage: conv_bench [steps]
// Prints the median wall-clock milliseconds per step and the mean CPU
// milliseconds per step (all threads): on a loaded machine wall-clock times
// drift, while CPU time still measures the work done.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "distflow/distflow.h"

namespace df = distflow;

namespace {

struct Timing {
  double wall_ms;  // median per step
  double cpu_ms;   // mean per step, all threads of the process
};

double ProcessCpuMs() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return 1e3 * (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-3 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

df::Tensor Random(const df::TensorShape& shape, unsigned seed) {
  df::Tensor t(df::DataType::kFloat, shape);
  srand(seed);
  for (float& v : t.flat<float>())
    v = static_cast<float>(rand()) / static_cast<float>(RAND_MAX);
  return t;
}

// Median milliseconds of one forward + backward step at `batch` and
// `threads` intra-op threads.
Timing MeasureDistflow(int64_t batch, int threads, int steps) {
  df::Scope s = df::Scope::NewRootScope();
  auto x = df::ops::Placeholder(s, df::DataType::kFloat);
  auto g = df::ops::Placeholder(s, df::DataType::kFloat);
  auto w1 = df::ops::Const(s, Random({5, 5, 1, 32}, 1));
  auto w2 = df::ops::Const(s, Random({5, 5, 32, 64}, 2));
  const std::vector<int64_t> one = {1, 1, 1, 1}, two = {1, 2, 2, 1};
  auto y1 = df::ops::Conv2D(s, x, w1, one, "SAME");
  auto p1 = df::ops::MaxPool(s, y1, two, two, "SAME");
  auto y2 = df::ops::Conv2D(s, p1, w2, one, "SAME");
  auto p2 = df::ops::MaxPool(s, y2, two, two, "SAME");
  // The backward pass written out, as Gradients() builds it.
  auto dy2 = df::ops::MaxPoolGrad(s, y2, p2, g, two, two, "SAME");
  auto dw2 = df::ops::Conv2DBackpropFilter(s, p1, df::ops::Shape(s, w2), dy2,
                                           one, "SAME");
  auto dp1 = df::ops::Conv2DBackpropInput(s, df::ops::Shape(s, p1), w2, dy2,
                                          one, "SAME");
  auto dy1 = df::ops::MaxPoolGrad(s, y1, p1, dp1, two, two, "SAME");
  auto dw1 = df::ops::Conv2DBackpropFilter(s, x, df::ops::Shape(s, w1), dy1,
                                           one, "SAME");
  if (!s.ok()) {
    std::fprintf(stderr, "building the graph failed: %s\n",
                 s.status().ToString().c_str());
    std::exit(1);
  }
  df::SessionOptions options;
  options.intra_op_threads = threads;
  auto session = df::ClientSession::Create(s, options);
  if (!session.ok()) {
    std::fprintf(stderr, "%s\n", session.status().ToString().c_str());
    std::exit(1);
  }
  const df::Tensor xv = Random({batch, 28, 28, 1}, 3);
  const df::Tensor gv = Random({batch, 7, 7, 64}, 4);
  std::vector<double> times;
  double cpu_start = 0;
  for (int i = 0; i < steps + 5; ++i) {
    if (i == 5) cpu_start = ProcessCpuMs();
    const auto start = std::chrono::steady_clock::now();
    auto out = (*session)->Run({{x, xv}, {g, gv}}, {dw1, dw2});
    const auto end = std::chrono::steady_clock::now();
    if (!out.ok()) {
      std::fprintf(stderr, "step failed: %s\n",
                   out.status().ToString().c_str());
      std::exit(1);
    }
    if (i >= 5)
      times.push_back(
          std::chrono::duration<double, std::milli>(end - start).count());
  }
  const double cpu = (ProcessCpuMs() - cpu_start) / steps;
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], cpu};
}

// PyTorch's best timing over its memory layouts (by wall time), or -1 if
// the peer cannot run.
Timing MeasurePeer(int64_t batch, int threads, int steps) {
  const std::string command =
      std::string("OPENBLAS_NUM_THREADS=1 ") +
      "/usr/bin/python3 " DISTFLOW_BENCH_DIR "/conv_peer.py " +
      std::to_string(batch) + " " + std::to_string(threads) + " " +
      std::to_string(steps) + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  Timing best{-1, -1};
  if (pipe == nullptr) return best;
  char layout[64];
  double wall, cpu;
  while (std::fscanf(pipe, "%63s %lf %lf", layout, &wall, &cpu) == 3) {
    std::printf("    pytorch %-13s %8.2f ms wall %8.2f ms cpu\n", layout, wall,
                cpu);
    if (best.wall_ms < 0 || wall < best.wall_ms) best = {wall, cpu};
  }
  pclose(pipe);
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 30;
  std::printf("conv+pool forward and backward per step (%d steps)\n", steps);
  for (int threads : {1, 2}) {
    for (int64_t batch : {64, 100}) {
      std::printf("batch %ld, %d thread(s)\n", static_cast<long>(batch),
                  threads);
      const Timing ours = MeasureDistflow(batch, threads, steps);
      std::printf("    distflow              %8.2f ms wall %8.2f ms cpu\n",
                  ours.wall_ms, ours.cpu_ms);
      const Timing peer = MeasurePeer(batch, threads, steps);
      if (peer.wall_ms > 0) {
        std::printf("    speedup over pytorch  %8.2fx wall %7.2fx cpu\n",
                    peer.wall_ms / ours.wall_ms, peer.cpu_ms / ours.cpu_ms);
      }
    }
  }
  return 0;
}
