// For tests of blocking ops: a session run on a thread of its own, so that a
// test can check that it waits and then wake it.
#ifndef DISTFLOW_KERNELS_ASYNC_RUN_TEST_UTIL_H_
#define DISTFLOW_KERNELS_ASYNC_RUN_TEST_UTIL_H_

#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "distflow/session.h"

namespace distflow {
namespace test {

class AsyncRun {
 public:
  // Starts `session->Run(feeds, fetches, targets)`; `session` must outlive
  // this.
  AsyncRun(ClientSession* session, ClientSession::FeedDict feeds,
           std::vector<Output> fetches, std::vector<Operation> targets = {})
      : thread_([this, session, feeds = std::move(feeds),
                 fetches = std::move(fetches), targets = std::move(targets)] {
          result_ = session->Run(feeds, fetches, targets);
          done_.Notify();
        }) {}
  AsyncRun(const AsyncRun&) = delete;
  AsyncRun& operator=(const AsyncRun&) = delete;
  ~AsyncRun() { thread_.join(); }

  // True if the run finished within `timeout`.
  bool FinishesWithin(absl::Duration timeout) {
    return done_.WaitForNotificationWithTimeout(timeout);
  }
  // Waits for the run and returns what it returned.
  absl::StatusOr<std::vector<Tensor>> Result() {
    done_.WaitForNotification();
    return result_;
  }

 private:
  absl::Notification done_;
  absl::StatusOr<std::vector<Tensor>> result_;
  std::thread thread_;  // last: starts once the rest exists
};

// How long a test watches a blocked op to see that it stays blocked, and the
// bound within which a woken op must finish.
inline constexpr absl::Duration kStaysBlocked = absl::Milliseconds(150);
inline constexpr absl::Duration kWakesWithin = absl::Seconds(20);

}  // namespace test
}  // namespace distflow

#endif  // DISTFLOW_KERNELS_ASYNC_RUN_TEST_UTIL_H_
