#include "base/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/clock.h"

#define EIGEN_USE_THREADS
#include "base/denormal.h"
#include "unsupported/Eigen/CXX11/Tensor"
#include "unsupported/Eigen/CXX11/ThreadPool"

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

// A loop handed out by RunParts. Shared with the helpers: one that runs
// after the call has returned touches only `next`, finds every part claimed,
// and never calls `fn` (which the caller may have destroyed by then).
struct ThreadPool::PartsJob {
  const std::function<void(int64_t)>* fn;
  int64_t parts;
  std::atomic<int64_t> next{0};
  // Parts done: counted first without the lock, for the caller's poll.
  std::atomic<int64_t> done_fast{0};
  absl::Mutex mu;
  int64_t finished ABSL_GUARDED_BY(mu) = 0;
};

// Where RunParts hands a loop to a pool thread that polls for one.
struct alignas(64) ThreadPool::LingerSlot {
  enum State : int {
    kAway,       // the thread runs a closure or waits in Eigen's pool
    kLingering,  // the thread polls `state` for a job
    kHanding,    // a RunParts call is storing `job`
    kHanded,     // `job` is the thread's to claim parts of
  };
  std::atomic<int> state{kAway};
  std::shared_ptr<PartsJob> job;  // written in kHanding, taken in kHanded
};

ThreadPool::ThreadPool(std::string name, int num_threads, IdleWait idle_wait)
    : name_(std::move(name)),
      idle_wait_(idle_wait),
      linger_slots_(
          idle_wait == IdleWait::kSleep
              ? std::make_unique<LingerSlot[]>(std::max(1, num_threads))
              : nullptr),
      pool_(std::make_unique<Eigen::ThreadPoolTempl<FlushingThreadEnvironment>>(
          std::max(1, num_threads),
          /*allow_spinning=*/idle_wait == IdleWait::kSpinThenSleep)) {
  device_ = std::make_unique<Eigen::ThreadPoolDevice>(pool_.get(),
                                                      pool_->NumThreads());
}

ThreadPool::~ThreadPool() {
  stopping_.store(true);  // lingering threads stop polling
  device_.reset();
  // Eigen::ThreadPool's destructor drains the queues and joins; closures
  // that run meanwhile must not reach it through pool_, null by then.
  pool_.reset();
}

void ThreadPool::Schedule(std::function<void()> fn) {
  pool_->Schedule(std::move(fn));
}

void ThreadPool::ParallelFor(int64_t n, int64_t cost_per_unit,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  // As many threads as the pool has (the caller being one of them), so that
  // a one-thread pool runs its loops inline: on a machine whose cores other
  // tasks keep busy, a second thread for an optimizer's update measured
  // slower (docs/benchmarks.md). A few parts per thread, so that one that
  // starts late or runs slowly leaves its share to the others; none cheaper
  // than kMinCyclesPerPart.
  constexpr int64_t kPartsPerThread = 4;
  const int threads = std::min(NumThreads(), HardwareThreads());
  const double cycles =
      static_cast<double>(n) * std::max<int64_t>(cost_per_unit, 1);
  const int64_t parts =
      std::min<int64_t>({n, static_cast<int64_t>(cycles / kMinCyclesPerPart),
                         kPartsPerThread * threads});
  if (threads <= 1 || parts <= 1) {
    fn(0, n);
    return;
  }
  RunParts(parts, [n, parts, &fn](int64_t i) {
    fn(i * n / parts, (i + 1) * n / parts);
  });
}

namespace {
// How long RunParts polls for the parts its helpers still run before it
// sleeps.
constexpr absl::Duration kPartsPoll = absl::Microseconds(500);
}  // namespace

void ThreadPool::Claim(PartsJob* job) {
  int64_t done = 0;
  for (int64_t i; (i = job->next.fetch_add(1)) < job->parts; ++done) {
    (*job->fn)(i);
  }
  if (done > 0) {
    job->done_fast.fetch_add(done);
    absl::MutexLock lock(&job->mu);
    job->finished += done;
  }
}

int64_t ThreadPool::HandToLingering(const std::shared_ptr<PartsJob>& job,
                                    int64_t wanted) {
  int64_t handed = 0;
  for (int i = 0; i < NumThreads() && handed < wanted; ++i) {
    LingerSlot& slot = linger_slots_[i];
    int expected = LingerSlot::kLingering;
    if (slot.state.load(std::memory_order_relaxed) != expected ||
        !slot.state.compare_exchange_strong(expected, LingerSlot::kHanding)) {
      continue;
    }
    slot.job = job;
    slot.state.store(LingerSlot::kHanded, std::memory_order_release);
    ++handed;
  }
  return handed;
}

// A step's loops follow each other within tens of microseconds; a helper
// that went back to sleep in Eigen's pool after each was woken for the next
// 20-40 us late (on a virtual machine), by when the caller had claimed most
// of it. Polling here, yielding the core between looks, it takes the next
// loop at once: the cost row's 1 ps + 1 worker trained 6-7% faster
// (docs/benchmarks.md, "Helpers that stay awake between loops"). Longer polls
// took more of the core than they saved: 200 us gained no more than 80, 1 ms
// lost 3% against 200 us, and a 4 MiB pull and push over TCP, whose copies
// want both cores, seemed to lose a little at 200 us.
// While it polls, the thread takes nothing from Eigen's queue; a closure
// queued meanwhile runs on another thread of the pool, or once it stops.
void ThreadPool::Linger(int index) {
  LingerSlot& slot = linger_slots_[index];
  slot.state.store(LingerSlot::kLingering);
  SteadyTime until =
      SteadyAfter(SteadyNow(), absl::Microseconds(kLingerMicros));
  for (;;) {
    int state = slot.state.load(std::memory_order_acquire);
    if (state == LingerSlot::kHanded) {
      std::shared_ptr<PartsJob> job = std::move(slot.job);
      slot.job.reset();
      slot.state.store(LingerSlot::kAway);
      Claim(job.get());
      job.reset();
      slot.state.store(LingerSlot::kLingering);
      until = SteadyAfter(SteadyNow(), absl::Microseconds(kLingerMicros));
      continue;
    }
    if (state == LingerSlot::kLingering &&
        (SteadyNow() >= until || stopping_.load(std::memory_order_relaxed)) &&
        slot.state.compare_exchange_strong(state, LingerSlot::kAway)) {
      return;
    }
    sched_yield();
  }
}

void ThreadPool::RunParts(int64_t parts,
                          const std::function<void(int64_t)>& fn) {
  if (parts <= 0) return;
  if (parts == 1) {
    fn(0);
    return;
  }
  auto job = std::make_shared<PartsJob>();
  job->fn = &fn;
  job->parts = parts;
  // One helper per other thread that can run at once: more would only
  // take turns on the cores, and one preempted in the middle of a part
  // holds up the end. Threads still polling after an earlier loop take the
  // job at once; the others are woken through Eigen's queues.
  int64_t helpers =
      std::min<int64_t>({parts - 1, NumThreads(), HardwareThreads() - 1});
  if (linger_slots_ != nullptr) helpers -= HandToLingering(job, helpers);
  Eigen::ThreadPoolInterface* eigen = pool_.get();
  for (int64_t h = 0; h < helpers; ++h) {
    pool_->Schedule([this, eigen, job]() mutable {
      Claim(job.get());
      job.reset();
      const int index = eigen->CurrentThreadId();
      // Not on a pool thread when Eigen ran the closure inline (its queue
      // full).
      if (linger_slots_ != nullptr && index >= 0) Linger(index);
    });
  }
  Claim(job.get());
  // Every part is claimed now; wait for those still running on helpers.
  // They run on other cores and end within a part's time: polling for them
  // (yielding to any thread that waits for this core) saves this thread a
  // sleep, and the helper the wake-up of a sleeper, which on a virtual
  // machine costs the waker about 15 us and the sleeper 20-40 us more. A
  // session training the MLP ran 10-26% faster (docs/benchmarks.md,
  // "Waiting for a loop's last parts").
  const SteadyTime until = SteadyAfter(SteadyNow(), kPartsPoll);
  while (job->done_fast.load() < parts && SteadyNow() < until) {
    sched_yield();
  }
  absl::MutexLock lock(&job->mu);
  job->mu.Await(absl::Condition(
      +[](PartsJob* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu) {
        return s->finished == s->parts;
      },
      job.get()));
}

int ThreadPool::NumThreads() const { return pool_->NumThreads(); }

int ThreadPool::HardwareThreads() {
  // Read once: glibc answers hardware_concurrency by opening and reading a
  // sysfs file, and every parallel loop asks (a profile of a training ps put
  // it at 7% of the task's CPU).
  static const int threads =
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return threads;
}

}  // namespace distflow
