#include "distributed/rpc/completion_queue_spin.h"

#include <chrono>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "base/clock.h"

namespace distflow {
namespace {

absl::Duration MicrosFromEnv(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  int64_t us = 0;
  if (value != nullptr && absl::SimpleAtoi(value, &us) && us >= 0) {
    return absl::Microseconds(us);
  }
  return absl::Microseconds(fallback);
}

}  // namespace

absl::Duration PollerSpin() {
  static const absl::Duration spin =
      MicrosFromEnv("DISTFLOW_POLLER_SPIN_US", 0);
  return spin;
}

absl::Duration CallerSpin() {
  static const absl::Duration spin =
      MicrosFromEnv("DISTFLOW_CALLER_SPIN_US", 200);
  return spin;
}

bool NextAfterSpinning(grpc::CompletionQueue* cq, absl::Duration spin,
                       void** tag, bool* ok) {
  if (spin > absl::ZeroDuration()) {
    // A deadline in the past: gRPC polls the connections once without
    // waiting (epoll_wait with a zero timeout) and returns.
    const std::chrono::system_clock::time_point past;
    const SteadyTime end = SteadyAfter(SteadyNow(), spin);
    do {
      switch (cq->AsyncNext(tag, ok, past)) {
        case grpc::CompletionQueue::GOT_EVENT:
          return true;
        case grpc::CompletionQueue::SHUTDOWN:
          return false;
        case grpc::CompletionQueue::TIMEOUT:
          break;
      }
    } while (SteadyNow() < end);
  }
  return cq->Next(tag, ok);
}

}  // namespace distflow
