// The steady clock, for every duration, deadline, timeout and expiry: it never
// jumps when the wall clock is set (NTP, an operator), so a step forward does
// not fail waits early and a step back does not stretch them. absl::Now() is
// for timestamps people read (logs, event files), never for measuring.
#ifndef DISTFLOW_BASE_CLOCK_H_
#define DISTFLOW_BASE_CLOCK_H_

#include <chrono>
#include <cstdint>

#include "absl/time/time.h"

namespace distflow {

using SteadyTime = std::chrono::steady_clock::time_point;

inline SteadyTime SteadyNow() { return std::chrono::steady_clock::now(); }

// The time passed since `start`.
inline absl::Duration SteadySince(SteadyTime start) {
  return absl::FromChrono(SteadyNow() - start);
}

// Nanoseconds on the steady clock, for an atomic<int64_t> (its epoch is
// arbitrary but never 0 in practice).
inline int64_t SteadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             SteadyNow().time_since_epoch())
      .count();
}

// `start` + `d`.
inline SteadyTime SteadyAfter(SteadyTime start, absl::Duration d) {
  return start + absl::ToChronoNanoseconds(d);
}

}  // namespace distflow

#endif  // DISTFLOW_BASE_CLOCK_H_
