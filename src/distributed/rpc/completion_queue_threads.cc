#include "distributed/rpc/completion_queue_threads.h"

#include <pthread.h>

#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "distributed/rpc/completion_queue_spin.h"

namespace distflow {
namespace {
// How long every polling thread may be in a handler before the standby
// thread polls too, and how often it looks.
constexpr int64_t kStandbyAfterNs = 5'000'000;
constexpr absl::Duration kStandbyCheck = absl::Milliseconds(5);
}  // namespace

bool CqTag::Track() { return threads_->Track(this); }

void CqTag::Release() {
  threads_->Untrack(this);
  delete this;
}

CompletionQueueThreads::CompletionQueueThreads(std::string name,
                                               grpc::CompletionQueue* cq,
                                               int num_threads)
    : name_(std::move(name)),
      owned_cq_(cq == nullptr ? std::make_unique<grpc::CompletionQueue>()
                              : nullptr),
      cq_(cq == nullptr ? owned_cq_.get() : cq),
      num_threads_(num_threads),
      spin_(PollerSpin()) {
  for (int i = 0; i < num_threads; ++i) {
    threads_.emplace_back([this] { Poll(); });
  }
  threads_.emplace_back([this] { Standby(); });
}

CompletionQueueThreads::~CompletionQueueThreads() { Shutdown(); }

bool CompletionQueueThreads::closing() const {
  absl::MutexLock lock(&mu_);
  return closing_;
}

bool CompletionQueueThreads::Track(CqTag* tag) {
  absl::MutexLock lock(&mu_);
  live_.insert(tag);
  if (closing_) tag->Cancel();
  return !closing_;
}

void CompletionQueueThreads::Untrack(CqTag* tag) {
  absl::MutexLock lock(&mu_);
  live_.erase(tag);
}

void CompletionQueueThreads::Close() {
  absl::MutexLock lock(&mu_);
  if (closing_) return;
  closing_ = true;
  // Under the lock: a tag cannot release itself while it is being cancelled.
  for (CqTag* tag : live_) tag->Cancel();
}

void CompletionQueueThreads::Shutdown() {
  Close();
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return live_.empty();
    };
    mu_.Await(absl::Condition(&drained));
    shut_down_ = true;
  }
  cq_->Shutdown();
  stop_standby_.Notify();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
}

void CompletionQueueThreads::Poll() {
  // Named for profiles (the kernel keeps 15 characters).
  pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
  void* tag = nullptr;
  bool ok = false;
  // After an event the thread polls on for a while before it sleeps when the
  // next message of a conversation (a step's next request, the reply to a
  // call just made) is likely to follow within tens of microseconds: a
  // sleeping thread would first have to be woken (completion_queue_spin.h).
  // It spins only while events come that close together (each wait that
  // ended soon allows the next to spin): where they do not
  // (steps that compute for milliseconds, as in training), spinning would
  // only take a core from the threads that compute (on 2 cores, 10-20% of
  // dist_train_bench's rate). An idle task blocks in Next and uses no CPU.
  bool spin = true;
  while (true) {
    const SteadyTime start = SteadyNow();
    if (!NextAfterSpinning(cq_, spin ? spin_ : absl::ZeroDuration(), &tag,
                           &ok)) {
      break;
    }
    // (Twice the budget: a wait that blocked also paid the wake-up.)
    spin = SteadySince(start) <= 2 * spin_;
    if (busy_.fetch_add(1) + 1 == num_threads_) {
      all_busy_since_ns_.store(SteadyNanos());
    }
    static_cast<CqTag*>(tag)->OnEvent(ok);
    if (busy_.fetch_sub(1) == num_threads_) all_busy_since_ns_.store(0);
  }
}

void CompletionQueueThreads::Standby() {
  pthread_setname_np(pthread_self(), (name_.substr(0, 13) + "_s").c_str());
  auto all_stuck = [this] {
    const int64_t since = all_busy_since_ns_.load();
    return since != 0 && SteadyNanos() - since > kStandbyAfterNs;
  };
  while (!stop_standby_.WaitForNotificationWithTimeout(kStandbyCheck)) {
    if (!all_stuck()) continue;
    // Poll until a polling thread is free again (checked after each event).
    void* tag = nullptr;
    bool ok = false;
    while (true) {
      if (!cq_->Next(&tag, &ok)) return;  // the queue is shut down
      static_cast<CqTag*>(tag)->OnEvent(ok);
      if (all_busy_since_ns_.load() == 0) break;
    }
  }
}

}  // namespace distflow
