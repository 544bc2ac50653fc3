// NextAfterSpinning takes an event as soon as it comes, whether during the
// spin or after it, and a thread waiting on an idle queue (a task's polling
// thread included) sleeps instead of spinning.
#include "distributed/rpc/completion_queue_spin.h"

#include <pthread.h>
#include <time.h>

#include <chrono>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "distributed/rpc/completion_queue_threads.h"
#include "grpcpp/alarm.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

std::chrono::system_clock::time_point In(absl::Duration d) {
  return std::chrono::system_clock::now() + absl::ToChronoMicroseconds(d);
}

absl::Duration CpuTime(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return absl::DurationFromTimespec(ts);
}

void* const kTag = reinterpret_cast<void*>(0x5a);

TEST(CompletionQueueSpinTest, TakesAnEventThatComesDuringTheSpin) {
  grpc::CompletionQueue cq;
  grpc::Alarm alarm;
  alarm.Set(&cq, In(absl::Milliseconds(1)), kTag);
  const absl::Time start = absl::Now();
  void* tag = nullptr;
  bool ok = false;
  // A spin of 60 s: the event must end it, not the budget. (Long, as on a
  // loaded machine the alarm's delivery may take seconds.)
  const absl::Duration budget = absl::Seconds(60);
  ASSERT_TRUE(NextAfterSpinning(&cq, budget, &tag, &ok));
  EXPECT_LT(absl::Now() - start, budget / 2);
  EXPECT_EQ(tag, kTag);
  EXPECT_TRUE(ok);
  cq.Shutdown();
  EXPECT_FALSE(NextAfterSpinning(&cq, absl::Seconds(10), &tag, &ok));
}

TEST(CompletionQueueSpinTest, SleepsAfterTheSpinAndWakesForTheEvent) {
  grpc::CompletionQueue cq;
  grpc::Alarm alarm;
  const absl::Duration wait = absl::Milliseconds(300);
  alarm.Set(&cq, In(wait), kTag);
  const absl::Time start = absl::Now();
  const absl::Duration cpu_start = CpuTime(CLOCK_THREAD_CPUTIME_ID);
  void* tag = nullptr;
  bool ok = false;
  ASSERT_TRUE(NextAfterSpinning(&cq, absl::Milliseconds(1), &tag, &ok));
  const absl::Duration cpu = CpuTime(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
  const absl::Duration waited = absl::Now() - start;
  EXPECT_EQ(tag, kTag);
  EXPECT_GE(waited, wait - absl::Milliseconds(5));
  EXPECT_LT(waited, wait + absl::Seconds(10));
  // A thread that spun through the wait would have used most of it (or, on
  // a loaded machine, its share of the cores: still far above this).
  EXPECT_LT(cpu, absl::Milliseconds(20)) << "the waiting thread spun";
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
}

TEST(CompletionQueueSpinTest, ReturnsFalseOnceShutDown) {
  for (absl::Duration spin : {absl::ZeroDuration(), absl::Milliseconds(1)}) {
    grpc::CompletionQueue cq;
    cq.Shutdown();
    void* tag = nullptr;
    bool ok = false;
    EXPECT_FALSE(NextAfterSpinning(&cq, spin, &tag, &ok));
  }
}

// An alarm on a CompletionQueueThreads' queue: one event, then released. Its
// handler, which runs on the polling thread, tells that thread's CPU clock.
class AlarmTag : public CqTag {
 public:
  static void Start(CompletionQueueThreads* threads, absl::Notification* fired,
                    clockid_t* handler_clock) {
    auto* tag = new AlarmTag(threads, fired, handler_clock);
    if (!tag->Track()) {
      tag->Release();
      return;
    }
    tag->alarm_.Set(threads->cq(), In(absl::ZeroDuration()), tag);
  }
  void OnEvent(bool /*ok*/) override {
    pthread_getcpuclockid(pthread_self(), handler_clock_);
    fired_->Notify();
    Release();
  }

 private:
  AlarmTag(CompletionQueueThreads* threads, absl::Notification* fired,
           clockid_t* handler_clock)
      : CqTag(threads), fired_(fired), handler_clock_(handler_clock) {}

  absl::Notification* const fired_;
  clockid_t* const handler_clock_;
  grpc::Alarm alarm_;
};

TEST(CompletionQueueSpinTest, AnIdlePollingThreadSleeps) {
  CompletionQueueThreads threads("spin_test", nullptr, 1);
  absl::Notification fired;
  clockid_t poller = CLOCK_THREAD_CPUTIME_ID;
  AlarmTag::Start(&threads, &fired, &poller);
  ASSERT_TRUE(fired.WaitForNotificationWithTimeout(absl::Seconds(10)));
  // The poller spins for at most PollerSpin() after the event, then sleeps.
  absl::SleepFor(PollerSpin() + absl::Milliseconds(20));
  // The control: this thread spins until it has had 30 ms of CPU. A poller
  // that spun too would get about as much meanwhile (the same share of the
  // cores, however loaded the machine is); a sleeping one gets next to none.
  // Only the poller's own CPU counts, not that of gRPC's threads.
  const absl::Duration poller_start = CpuTime(poller);
  const absl::Duration control_start = CpuTime(CLOCK_THREAD_CPUTIME_ID);
  const absl::Time wall_start = absl::Now();
  absl::Duration control;
  do {
    control = CpuTime(CLOCK_THREAD_CPUTIME_ID) - control_start;
  } while (control < absl::Milliseconds(30));
  const absl::Duration used = CpuTime(poller) - poller_start;
  EXPECT_LT(used, control / 10)
      << "an idle polling thread used the CPU: " << used << " while a "
      << "spinning thread had " << control << " in "
      << absl::Now() - wall_start;
}

}  // namespace
}  // namespace distflow
