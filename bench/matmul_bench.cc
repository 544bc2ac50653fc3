// float32 MatMul: distflow (through a session run, and the kernel's product
// directly) against OpenBLAS's cblas_sgemm and Eigen's tensor contraction on
// the same shapes in the same run. Prints GFLOP/s and distflow's ratio to the
// best peer.
//
//   build/bench/matmul_bench [threads]   (default: every hardware thread)
#define EIGEN_USE_THREADS

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/thread_pool.h"
#include "cblas.h"
#include "distflow/ops.h"
#include "distflow/scope.h"
#include "distflow/session.h"
#include "distflow/tensor.h"
#include "kernels/matmul.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace df = distflow;

namespace {

struct Shape {
  const char* name;
  int64_t m, k, n;
  bool ta, tb;
};

// Wall and CPU (all threads of the process) seconds per call.
struct Timing {
  double wall = 0;
  double cpu = 0;
};

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// The best of 3 rounds, each of as many calls as fit in about 0.2 s. On a
// machine shared with other work, wall time swings with the load while CPU
// time per call (work done, including any spinning) stays comparable.
Timing TimePerCall(const std::function<void()>& fn) {
  using Clock = std::chrono::steady_clock;
  fn();  // warm up: first-touch pages, BLAS buffers
  Timing best{1e30, 1e30};
  for (int round = 0; round < 3; ++round) {
    int calls = 0;
    const auto start = Clock::now();
    const double cpu_start = ProcessCpuSeconds();
    double elapsed = 0;
    do {
      fn();
      ++calls;
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    } while (elapsed < 0.2);
    best.wall = std::min(best.wall, elapsed / calls);
    best.cpu = std::min(best.cpu, (ProcessCpuSeconds() - cpu_start) / calls);
  }
  return best;
}

df::Tensor Random(int64_t rows, int64_t cols, unsigned seed) {
  df::Tensor t(df::DataType::kFloat, df::TensorShape({rows, cols}));
  unsigned s = seed;
  for (float& v : t.flat<float>()) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(s >> 8) / static_cast<float>(1u << 24) - 0.5f;
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads =
      argc > 1 ? std::atoi(argv[1]) : df::ThreadPool::HardwareThreads();
  const Shape shapes[] = {
      {"512^3", 512, 512, 512, false, false},
      {"1024^3", 1024, 1024, 1024, false, false},
      {"2048^3", 2048, 2048, 2048, false, false},
      {"mlp fwd1 [128,784]x[784,256]", 128, 784, 256, false, false},
      {"mlp fwd2 [128,256]x[256,128]", 128, 256, 128, false, false},
      {"mlp dW1 [784,128]'x[128,256]", 784, 128, 256, true, false},
      {"mlp dx1 [128,256]x[784,256]'", 128, 256, 784, false, true},
      {"mlp dW2 [256,128]'x[128,128]", 256, 128, 128, true, false},
      {"mlp dx2 [128,128]x[256,128]'", 128, 128, 256, false, true},
  };
  std::printf("float32 MatMul, %d threads: GFLOP/s\n", threads);
  std::printf("%-30s %9s %9s %9s %9s %9s %7s\n", "shape", "session", "kernel",
              "blas-1t", "blas-Nt", "eigen", "ratio");
  df::ThreadPool pool("bench", threads);
  double worst_ratio = 1e30;
  for (const Shape& s : shapes) {
    const df::Tensor a = s.ta ? Random(s.k, s.m, 1) : Random(s.m, s.k, 1);
    const df::Tensor b = s.tb ? Random(s.n, s.k, 2) : Random(s.k, s.n, 2);
    df::Tensor c(df::DataType::kFloat, df::TensorShape({s.m, s.n}));
    const double flops = 2.0 * s.m * s.n * s.k;
    auto gflops = [&](double sec) { return flops / sec / 1e9; };

    // distflow through a session: a graph of two constants and a MatMul.
    df::Scope root = df::Scope::NewRootScope();
    df::Output y = df::ops::MatMul(root, a, b, {s.ta, s.tb});
    df::SessionOptions options;
    options.intra_op_threads = threads;
    options.inter_op_threads = 1;
    auto session = df::ClientSession::Create(root, options);
    if (!session.ok()) {
      std::fprintf(stderr, "%s\n", session.status().ToString().c_str());
      return 1;
    }
    const Timing t_session = TimePerCall([&] {
      auto out = (*session)->Run({y});
      if (!out.ok()) std::abort();
    });
    const Timing t_kernel = TimePerCall([&] {
      df::MatMulProduct<float>(a.data<float>(), b.data<float>(),
                               c.data<float>(), s.m, s.n, s.k, s.ta, s.tb,
                               &pool);
    });

    auto sgemm = [&] {
      cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans,
                  s.tb ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.0f,
                  a.data<float>(), s.ta ? s.m : s.k, b.data<float>(),
                  s.tb ? s.k : s.n, 0.0f, c.data<float>(), s.n);
    };
    openblas_set_num_threads(1);
    const Timing t_blas1 = TimePerCall(sgemm);
    openblas_set_num_threads(threads);
    const Timing t_blasn = TimePerCall(sgemm);
    openblas_set_num_threads(1);
    // OpenBLAS's threads spin a while after a call; let them go to sleep.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));

    using Matrix =
        Eigen::TensorMap<Eigen::Tensor<const float, 2, Eigen::RowMajor>>;
    using OutMatrix =
        Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>>;
    Matrix ma(a.data<float>(), a.dim_size(0), a.dim_size(1));
    Matrix mb(b.data<float>(), b.dim_size(0), b.dim_size(1));
    OutMatrix mc(c.data<float>(), s.m, s.n);
    const std::array<Eigen::IndexPair<Eigen::Index>, 1> dims = {
        Eigen::IndexPair<Eigen::Index>(s.ta ? 0 : 1, s.tb ? 1 : 0)};
    const Timing t_eigen = TimePerCall(
        [&] { mc.device(pool.eigen_device()) = ma.contract(mb, dims); });

    const double best_peer =
        std::min({t_blas1.wall, t_blasn.wall, t_eigen.wall});
    const double ratio = best_peer / t_session.wall;
    worst_ratio = std::min(worst_ratio, ratio);
    std::printf("%-30s %9.1f %9.1f %9.1f %9.1f %9.1f %7.2f\n", s.name,
                gflops(t_session.wall), gflops(t_kernel.wall),
                gflops(t_blas1.wall), gflops(t_blasn.wall),
                gflops(t_eigen.wall), ratio);
    std::printf("%-30s %9.1f %9.1f %9.1f %9.1f %9.1f\n", "  per CPU-second",
                gflops(t_session.cpu), gflops(t_kernel.cpu),
                gflops(t_blas1.cpu), gflops(t_blasn.cpu), gflops(t_eigen.cpu));
  }
  std::printf(
      "ratio = best peer wall time / distflow session wall time (1.0: as fast "
      "as the best peer); worst %.2f\n"
      "per CPU-second: GFLOP per second of CPU time of all threads (the "
      "work per core, robust to other load on the machine)\n",
      worst_ratio);
  return 0;
}
