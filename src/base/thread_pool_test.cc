#include "base/thread_pool.h"

#include <atomic>
#include <vector>

#include "absl/synchronization/blocking_counter.h"
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

TEST(ThreadPoolTest, ParallelForOfNothingCallsNothing) {
  ThreadPool pool("test", 1);
  bool called = false;
  pool.ParallelFor(0, 1, [&](int64_t, int64_t) { called = true; });
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace distflow
