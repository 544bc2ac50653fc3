#include "base/thread_pool.h"

#include <algorithm>
#include <thread>
#include <utility>

#define EIGEN_USE_THREADS
#include "unsupported/Eigen/CXX11/Tensor"
#include "unsupported/Eigen/CXX11/ThreadPool"

#include "base/denormal.h"

namespace distflow {
namespace {

// Eigen's threads, each flushing denormals from its start: a pool's threads
// run kernels and their intra-op shards (base/denormal.h).
struct FlushingThreadEnvironment : Eigen::StlThreadEnvironment {
  EnvThread* CreateThread(std::function<void()> f) {
    return StlThreadEnvironment::CreateThread([f = std::move(f)] {
      FlushDenormalsOnThisThread();
      f();
    });
  }
};

}  // namespace

ThreadPool::ThreadPool(std::string name, int num_threads, IdleWait idle_wait)
    : name_(std::move(name)),
      pool_(std::make_unique<Eigen::ThreadPoolTempl<FlushingThreadEnvironment>>(
          std::max(1, num_threads),
          /*allow_spinning=*/idle_wait == IdleWait::kSpinThenSleep)) {
  device_ = std::make_unique<Eigen::ThreadPoolDevice>(pool_.get(),
                                                      pool_->NumThreads());
}

ThreadPool::~ThreadPool() {
  device_.reset();
  pool_.reset();  // Eigen::ThreadPool's destructor drains the queues and joins.
}

void ThreadPool::Schedule(std::function<void()> fn) {
  pool_->Schedule(std::move(fn));
}

void ThreadPool::ParallelFor(int64_t n, int64_t cost_per_unit,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  // Eigen's cost model: bytes loaded, bytes stored, compute cycles per unit.
  device_->parallelFor(
      n, Eigen::TensorOpCost(0, 0, static_cast<double>(cost_per_unit)),
      [&fn](Eigen::Index begin, Eigen::Index end) { fn(begin, end); });
}

int ThreadPool::NumThreads() const { return pool_->NumThreads(); }

int ThreadPool::HardwareThreads() {
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace distflow
