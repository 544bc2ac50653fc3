#include "base/mutex_checks.h"

#include "absl/base/call_once.h"
#include "absl/synchronization/mutex.h"

namespace distflow {

void DisableMutexDeadlockDetection() {
  // Once only, so that a program that turned the detection back on after
  // creating its first server keeps it on.
  static absl::once_flag once;
  absl::call_once(once, [] {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  });
}

}  // namespace distflow
