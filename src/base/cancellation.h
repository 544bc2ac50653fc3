// Cooperative cancellation of a step: blocking work registers a callback that
// unblocks it.
#ifndef DISTFLOW_BASE_CANCELLATION_H_
#define DISTFLOW_BASE_CANCELLATION_H_

#include <cstdint>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

namespace distflow {

class CancellationManager {
 public:
  using Token = int64_t;

  CancellationManager() = default;
  CancellationManager(const CancellationManager&) = delete;
  CancellationManager& operator=(const CancellationManager&) = delete;

  // Runs every registered callback once (outside the lock, on the calling
  // thread). Later calls are no-ops. Thread-safe.
  void StartCancel();
  bool IsCancelled() const { return cancelled_.HasBeenNotified(); }

  // Registers `callback` to run on cancellation and sets `*token`. Returns
  // false, registering nothing, if cancellation has already started: the caller
  // must then give up by itself.
  bool RegisterCallback(std::function<void()> callback, Token* token);

  // Removes a callback. Returns false if cancellation has started; in that case
  // the callback has run or is running, and this call waits until it has
  // returned.
  bool DeregisterCallback(Token token);

 private:
  absl::Mutex mu_;
  absl::Notification cancelled_;
  absl::Notification callbacks_done_;
  bool cancelling_ ABSL_GUARDED_BY(mu_) = false;
  Token next_token_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<Token, std::function<void()>> callbacks_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace distflow

#endif  // DISTFLOW_BASE_CANCELLATION_H_
