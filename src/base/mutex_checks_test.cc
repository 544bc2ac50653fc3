#include "base/mutex_checks.h"

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

// Debian's abseil checks lock orders and kills the process at the first
// inversion; once the detection is off (as every server and session turns
// it), locking two mutexes in both orders is only that.
TEST(MutexChecksTest, LockOrderIsNotTrackedOnceDetectionIsOff) {
  DisableMutexDeadlockDetection();
  DisableMutexDeadlockDetection();  // a second call is harmless
  absl::Mutex a, b;
  {
    absl::MutexLock first(&a);
    absl::MutexLock second(&b);
  }
  {
    absl::MutexLock first(&b);
    absl::MutexLock second(&a);
  }
  SUCCEED();
}

}  // namespace
}  // namespace distflow
