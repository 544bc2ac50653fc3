// A fixed-size pool of threads (Eigen's work-stealing pool underneath).
#ifndef DISTFLOW_BASE_THREAD_POOL_H_
#define DISTFLOW_BASE_THREAD_POOL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace Eigen {
class ThreadPoolInterface;
class ThreadPoolDevice;
}  // namespace Eigen

namespace distflow {

class ThreadPool {
 public:
  // How a thread with nothing to do waits for work.
  enum class IdleWait {
    // Polls the queues for a while before it sleeps: work that comes soon
    // after (the next op of a step) starts without a wake-up.
    kSpinThenSleep,
    // Sleeps at once: an idle pool leaves the cores to other threads and
    // processes (work that comes after a network wait, cores shared with
    // other tasks). Only a thread that has just helped with a parallel loop
    // stays awake a little longer (kLingerMicros), polling for the next loop's
    // parts, so that the loops of one step do not each wait for a wake-up.
    kSleep,
  };

  // Starts `num_threads` threads (at least one). `name` appears in error
  // messages only.
  ThreadPool(std::string name, int num_threads,
             IdleWait idle_wait = IdleWait::kSpinThenSleep);
  // Waits for every scheduled closure to finish, then joins the threads.
  ~ThreadPool();

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs `fn` on some thread of the pool, later. Thread-safe.
  void Schedule(std::function<void()> fn);

  // Calls fn(begin, end) on disjoint ranges covering [0, n), on the calling
  // thread and the pool (as RunParts), and returns when all calls have
  // returned. `cost_per_unit` is the rough number of cycles one unit costs:
  // small totals, and every loop of a one-thread pool, run inline on the
  // caller; larger ones in parts of at least kMinCyclesPerPart, a few per
  // thread so that the work evens out, on as many threads as the pool has
  // (the caller counting as one). Safe to call from the pool's own threads.
  void ParallelFor(int64_t n, int64_t cost_per_unit,
                   const std::function<void(int64_t, int64_t)>& fn);

  // Calls fn(i) for every i in [0, parts), on the calling thread and on up to
  // parts - 1 of the pool's threads (no more than the machine's hardware
  // threads can run beside the caller), and returns when all calls have
  // returned. Each participant claims parts until none is left, so a pool
  // thread that starts late (asleep, or busy with other work) finds nothing
  // to do: the call never waits for a thread to wake, only for parts already
  // under way, which it polls for (yielding its core) before it sleeps. Safe
  // to call from the pool's own threads.
  void RunParts(int64_t parts, const std::function<void(int64_t)>& fn);

  // The least work, in cycles, worth handing to another thread (its wake-up
  // costs a few microseconds of the caller's and more of the system's).
  static constexpr int64_t kMinCyclesPerPart = 50000;

  // How long a kSleep pool's thread that has just run a loop's parts polls
  // for the next loop before it sleeps.
  static constexpr int kLingerMicros = 80;

  int NumThreads() const;
  const std::string& name() const { return name_; }
  IdleWait idle_wait() const { return idle_wait_; }

  // For Eigen tensor expressions that evaluate on this pool.
  const Eigen::ThreadPoolDevice& eigen_device() const { return *device_; }

  // The number of hardware threads of this machine (at least 1), as counted
  // when first asked.
  static int HardwareThreads();

 private:
  struct PartsJob;
  struct LingerSlot;

  // Claims parts of `job` until none is left.
  static void Claim(PartsJob* job);
  // Has the pool thread `index` poll for a loop to help with (handed to it by
  // RunParts through its slot) for up to kLingerMicros after its last one.
  void Linger(int index);
  // Hands `job` to up to `wanted` lingering threads; returns how many took
  // it.
  int64_t HandToLingering(const std::shared_ptr<PartsJob>& job, int64_t wanted);

  std::string name_;
  IdleWait idle_wait_;
  // One per pool thread; empty for a pool that spins when idle (its threads
  // poll Eigen's queues instead).
  std::unique_ptr<LingerSlot[]> linger_slots_;
  std::atomic<bool> stopping_{false};  // set by the destructor
  std::unique_ptr<Eigen::ThreadPoolInterface> pool_;
  std::unique_ptr<Eigen::ThreadPoolDevice> device_;
};

}  // namespace distflow

#endif  // DISTFLOW_BASE_THREAD_POOL_H_
