#include "kernels/wait_list.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace distflow {

void Wakeups::Run() {
  // A callback may add more (it never does today, but stay correct).
  while (!fns_.empty()) {
    std::vector<std::function<void()>> fns;
    fns.swap(fns_);
    for (auto& fn : fns) fn();
  }
}

void WaitList::Wait(CancellationManager* cancellation,
                    std::shared_ptr<void> owner, std::string what,
                    ServeFn serve, DoneFn done, Wakeups* wakeups) {
  Waiter waiter;
  waiter.id = next_id_++;
  waiter.cancellation = cancellation;
  waiter.owner = owner;
  waiter.serve = std::move(serve);
  waiter.done = std::move(done);
  if (cancellation != nullptr) {
    // The callback holds the resource alive: it may run after the waiter was
    // served and removed, until Finish deregisters it.
    const int64_t id = waiter.id;
    const bool registered = cancellation->RegisterCallback(
        [this, id, what, owner] { Cancel(id, what); }, &waiter.token);
    if (!registered) {
      DoneFn d = std::move(waiter.done);
      wakeups->Add([d = std::move(d), what] {
        d(absl::CancelledError(
            absl::StrCat("the step was cancelled before waiting for ", what)));
      });
      return;
    }
  }
  waiters_.push_back(std::move(waiter));
}

void WaitList::Notify(Wakeups* wakeups) {
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (it->serve()) {
      Finish(std::move(*it), absl::OkStatus(), wakeups);
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
}

void WaitList::FailAll(const absl::Status& status, Wakeups* wakeups) {
  for (Waiter& waiter : waiters_) Finish(std::move(waiter), status, wakeups);
  waiters_.clear();
}

void WaitList::Cancel(int64_t id, const std::string& what) {
  DoneFn done;
  {
    absl::MutexLock lock(mu_);
    for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
      if (it->id == id) {
        done = std::move(it->done);
        waiters_.erase(it);
        break;
      }
    }
  }
  // Not found: it was served or failed meanwhile, and finishes there.
  if (done) {
    done(absl::CancelledError(
        absl::StrCat("the step was cancelled while waiting for ", what)));
  }
}

void WaitList::Finish(Waiter waiter, absl::Status status, Wakeups* wakeups) {
  wakeups->Add([waiter = std::move(waiter), status = std::move(status)] {
    // If the step's cancellation has started, this waits for the callback,
    // which finds the waiter gone and does nothing.
    if (waiter.cancellation != nullptr) {
      waiter.cancellation->DeregisterCallback(waiter.token);
    }
    waiter.done(status);
  });
}

}  // namespace distflow
