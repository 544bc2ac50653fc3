// Kernels blocked on a resource (a queue, an accumulator), waiting without
// holding a thread until the resource can serve them or their step is
// cancelled.
//
// The resource owns a WaitList guarded by its own mutex. A kernel that cannot
// be served at once adds a waiter with Wait; every change of the resource calls
// Notify, which serves the waiters that can now be served. A waiter's step
// cancellation (an aborted step, a killed task) removes it and finishes it with
// CANCELLED, so a blocked op never outlives its step.
//
// Completion callbacks never run under the resource's mutex (they may start
// more of a step, which may touch the resource again): the methods collect
// them in a Wakeups list that the caller runs after unlocking.
#ifndef DISTFLOW_KERNELS_WAIT_LIST_H_
#define DISTFLOW_KERNELS_WAIT_LIST_H_

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "base/cancellation.h"

namespace distflow {

// Callbacks to run once the resource's mutex is released.
class Wakeups {
 public:
  Wakeups() = default;
  Wakeups(const Wakeups&) = delete;
  Wakeups& operator=(const Wakeups&) = delete;
  // Runs whatever was not run yet.
  ~Wakeups() { Run(); }

  void Add(std::function<void()> fn) { fns_.push_back(std::move(fn)); }
  void Run();

 private:
  std::vector<std::function<void()>> fns_;
};

class WaitList {
 public:
  // Called with the resource's mutex held whenever the resource changed;
  // returns true once it has served its waiter (taken an element, computed a
  // result), false to keep waiting.
  using ServeFn = std::function<bool()>;
  // Finishes the waiter: OK once served, else the reason it gave up.
  using DoneFn = std::function<void(const absl::Status&)>;

  // `mu` is the resource's mutex: every method below requires it held.
  explicit WaitList(absl::Mutex* mu) : mu_(mu) {}
  // Every waiter must have been finished (FailAll) before destruction; the
  // waiters keep their resource alive, so this holds by construction.
  ~WaitList() = default;

  // Queues a waiter that `serve` will serve. `owner` keeps the resource alive
  // while the waiter is queued. `what` says what it waits for ("a token from
  // queue 'q'"), for the message of a cancelled wait. If `cancellation` (may be
  // null) has already started, queues nothing and finishes with CANCELLED.
  void Wait(CancellationManager* cancellation, std::shared_ptr<void> owner,
            std::string what, ServeFn serve, DoneFn done, Wakeups* wakeups)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Offers the resource to every waiter in arrival order; the served ones
  // leave the list and finish with OK.
  void Notify(Wakeups* wakeups) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Finishes every waiter with `status` (a closed resource).
  void FailAll(const absl::Status& status, Wakeups* wakeups)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // For callers holding the resource's mutex under its own name: tells the
  // thread-safety analysis, which cannot see that the two are one, that this
  // list's is held (and checks that it is).
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK(mu_) { mu_->AssertHeld(); }

  int size() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return static_cast<int>(waiters_.size());
  }

 private:
  struct Waiter {
    int64_t id = 0;
    CancellationManager* cancellation = nullptr;
    CancellationManager::Token token = 0;
    std::shared_ptr<void> owner;
    ServeFn serve;
    DoneFn done;
  };
  // Removes waiter `id` if still queued (its step was cancelled).
  void Cancel(int64_t id, const std::string& what);
  // Schedules `waiter`'s finish: deregister from its step's cancellation,
  // then report `status`.
  static void Finish(Waiter waiter, absl::Status status, Wakeups* wakeups);

  absl::Mutex* const mu_;
  std::list<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace distflow

#endif  // DISTFLOW_KERNELS_WAIT_LIST_H_
