#include "base/thread_pool.h"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

TEST(ThreadPoolTest, ScheduleRunsEveryClosure) {
  std::atomic<int> sum{0};
  {
    ThreadPool pool("test", 2);
    absl::BlockingCounter done(100);
    for (int i = 1; i <= 100; ++i) {
      pool.Schedule([&sum, &done, i] {
        sum += i;
        done.DecrementCount();
      });
    }
    done.Wait();
  }
  EXPECT_EQ(sum.load(), 5050);
}

TEST(ThreadPoolTest, ParallelForCoversRangeExactlyOnce) {
  ThreadPool pool("test", 2);
  std::vector<std::atomic<int>> hits(10000);
  pool.ParallelFor(hits.size(), 100000, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) hits[i]++;
  });
  for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
}

// Seconds of CPU time of the clock `clock`.
double CpuSeconds(clockid_t clock) {
  timespec t;
  clock_gettime(clock, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// CPU time the pool's threads spend per closure when each closure comes
// after the pool has gone idle (1 ms after the last one ended).
double PoolCpuPerIdleStart(ThreadPool::IdleWait idle_wait) {
  ThreadPool pool("test", 2, idle_wait);
  constexpr int kClosures = 100;
  const double process = CpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
  const double self = CpuSeconds(CLOCK_THREAD_CPUTIME_ID);
  for (int i = 0; i < kClosures; ++i) {
    std::atomic<bool> ran{false};
    pool.Schedule([&ran] { ran = true; });
    while (!ran) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const double others = (CpuSeconds(CLOCK_PROCESS_CPUTIME_ID) - process) -
                        (CpuSeconds(CLOCK_THREAD_CPUTIME_ID) - self);
  return others / kClosures;
}

// A pool that sleeps when idle leaves the core alone between closures; one
// that spins first polls for a while after each (Eigen's pool: tens of
// microseconds). The two are measured in turn, six times, and each keeps
// its least: a burst of load from other processes (ctest runs tests two at a
// time) once made one measurement of the sleeping pool ten times its usual,
// and with three rounds the test failed in one full ctest run of three.
TEST(ThreadPoolTest, APoolThatSleepsWhenIdleSpendsLessCpuBetweenClosures) {
  double spins = 1;
  double sleeps = 1;
  for (int round = 0; round < 6; ++round) {
    spins = std::min(spins,
                     PoolCpuPerIdleStart(ThreadPool::IdleWait::kSpinThenSleep));
    sleeps =
        std::min(sleeps, PoolCpuPerIdleStart(ThreadPool::IdleWait::kSleep));
  }
  EXPECT_LT(sleeps, spins / 2) << "CPU seconds per closure: sleeping pool "
                               << sleeps << ", spinning pool " << spins;
}

TEST(ThreadPoolTest, ParallelForOfNothingCallsNothing) {
  ThreadPool pool("test", 1);
  bool called = false;
  pool.ParallelFor(0, 1, [&](int64_t, int64_t) { called = true; });
  EXPECT_FALSE(called);
}

TEST(ThreadPoolTest, RunPartsCallsEveryPartOnce) {
  ThreadPool pool("test", 3);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::atomic<int>> hits(13);
    pool.RunParts(hits.size(), [&](int64_t i) { hits[i]++; });
    for (const auto& h : hits) ASSERT_EQ(h.load(), 1) << "round " << round;
  }
}

// A pool whose only thread is busy: RunParts runs every part on the caller
// instead of waiting for the thread, and the helper that runs once the thread
// is free finds nothing left to do.
TEST(ThreadPoolTest, RunPartsDoesNotWaitForABusyPool) {
  ThreadPool pool("test", 1);
  absl::Notification release;
  pool.Schedule([&release] { release.WaitForNotification(); });
  std::atomic<int> calls{0};
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> all_on_caller{true};
  pool.RunParts(8, [&](int64_t) {
    if (std::this_thread::get_id() != caller) all_on_caller = false;
    calls++;
  });
  EXPECT_EQ(calls.load(), 8);
  EXPECT_TRUE(all_on_caller.load());
  release.Notify();
  // The late helper runs now; it must not call the finished loop's function.
  absl::Notification drained;
  pool.Schedule([&drained] { drained.Notify(); });
  drained.WaitForNotification();
  EXPECT_EQ(calls.load(), 8);
}

// Runs a loop of two parts on `pool`, the caller's part lasting until a pool
// thread has claimed the other, which runs `helper_part`; false if no pool
// thread claimed it within 10 seconds.
bool RunPartsWithAHelper(ThreadPool& pool,
                         const std::function<void()>& helper_part) {
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> helper_claimed{false};
  pool.RunParts(2, [&](int64_t) {
    if (std::this_thread::get_id() == caller) {
      const absl::Time give_up = absl::Now() + absl::Seconds(10);
      while (!helper_claimed.load() && absl::Now() < give_up) {
        std::this_thread::yield();
      }
      return;
    }
    helper_claimed = true;
    helper_part();
  });
  return helper_claimed.load();
}

// A helper's part that outlasts the caller's poll for it: the caller then
// sleeps until the part is done, and returns only after it, both when the
// part ends within the poll and when it ends long after.
TEST(ThreadPoolTest, RunPartsWaitsForAHelpersPartPastItsPoll) {
  if (ThreadPool::HardwareThreads() < 2) GTEST_SKIP() << "no helper runs";
  ThreadPool pool("test", 1);
  for (const absl::Duration part :
       {absl::Microseconds(100), absl::Milliseconds(20)}) {
    std::atomic<bool> helper_done{false};
    ASSERT_TRUE(RunPartsWithAHelper(pool, [&] {
      absl::SleepFor(part);
      helper_done = true;
    }));
    EXPECT_TRUE(helper_done.load())
        << "returned before a part of " << absl::FormatDuration(part);
  }
}

// Voluntary context switches of the calling thread so far: each is a sleep.
long SleepsOfThisThread() {
  rusage usage;
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_nvcsw;
}

// Runs a loop of two parts on `pool`, one of them on a pool thread; returns
// that thread's sleeps counted at the start and at the end of its part.
std::pair<long, long> LoopWithOneHelper(ThreadPool& pool) {
  std::pair<long, long> sleeps{-1, -1};
  RunPartsWithAHelper(pool, [&] {
    sleeps.first = SleepsOfThisThread();
    sleeps.second = SleepsOfThisThread();
  });
  return sleeps;
}

// A pool that sleeps when idle keeps a thread that has just helped with a
// loop awake for the next one, which it takes without a wake-up: the loops
// of a step follow each other within microseconds. Counted over 40 pairs of
// loops, since a caller preempted for longer than the poll between the two
// lets the helper sleep: on an idle machine all 40 pass, beside two
// processes that keep both cores busy 10-31; with the helpers going back to
// Eigen's pool after each loop, none does.
TEST(ThreadPoolTest, ASleepingPoolsHelperTakesTheNextLoopWithoutSleeping) {
  if (ThreadPool::HardwareThreads() < 2) GTEST_SKIP() << "no helper runs";
  ThreadPool pool("test", 1, ThreadPool::IdleWait::kSleep);
  int awake = 0;
  for (int round = 0; round < 40; ++round) {
    absl::SleepFor(absl::Milliseconds(2));  // the helper sleeps before
    const auto first = LoopWithOneHelper(pool);
    const auto second = LoopWithOneHelper(pool);
    ASSERT_GE(first.second, 0);
    ASSERT_GE(second.first, 0);
    if (second.first == first.second) ++awake;
  }
  EXPECT_GE(awake, 4) << "pairs of loops whose helper stayed awake";
}

// Helpers still queued or polling when the pool goes away finish without
// touching it.
TEST(ThreadPoolTest, ASleepingPoolWithHelpersInFlightIsDestroyedCleanly) {
  for (int round = 0; round < 100; ++round) {
    ThreadPool pool("test", 2, ThreadPool::IdleWait::kSleep);
    std::atomic<int> calls{0};
    for (int loop = 0; loop < 20; ++loop) {
      pool.RunParts(3, [&](int64_t) { calls++; });
    }
    ASSERT_EQ(calls.load(), 60);
  }
}

// Called from every thread of the pool at once, a loop cannot wait on work
// queued behind the callers: each caller takes the parts no other thread has.
TEST(ThreadPoolTest, ParallelForFromEveryThreadOfThePoolFinishes) {
  ThreadPool pool("test", 2);
  std::vector<std::atomic<int>> hits(2000);
  absl::BlockingCounter done(2);
  for (int half = 0; half < 2; ++half) {
    pool.Schedule([&, half] {
      pool.ParallelFor(1000, 1000000, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) hits[half * 1000 + i]++;
      });
      done.DecrementCount();
    });
  }
  done.Wait();
  for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
}

// Work large enough is shared with the pool's threads (where another thread
// can run beside the caller).
TEST(ThreadPoolTest, ParallelForSharesLargeWorkWithThePool) {
  if (ThreadPool::HardwareThreads() < 2) GTEST_SKIP() << "one hardware thread";
  ThreadPool pool("test", 2);
  absl::Mutex mu;
  std::set<std::thread::id> threads;
  for (int round = 0; round < 200 && threads.size() < 2; ++round) {
    pool.ParallelFor(64, 1000000, [&](int64_t, int64_t) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      absl::MutexLock lock(&mu);
      threads.insert(std::this_thread::get_id());
    });
  }
  EXPECT_GE(threads.size(), 2u);
}

}  // namespace
}  // namespace distflow
