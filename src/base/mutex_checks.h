// Process-wide settings of abseil's mutexes.
#ifndef DISTFLOW_BASE_MUTEX_CHECKS_H_
#define DISTFLOW_BASE_MUTEX_CHECKS_H_

namespace distflow {

// Turns off abseil's mutex deadlock detection in this process. Debian builds
// abseil with it on, set to kill the process at the first lock-order
// inversion: every Lock of an absl::Mutex then updates a global graph of lock
// orders (GraphCycles), which cost 2-3% of the CPU time of both tasks of a
// distributed training step (docs/benchmarks.md). Servers and sessions call
// this when they are created; a program that wants the detection (a debugging
// run) can turn it back on afterwards with absl::SetMutexDeadlockDetectionMode.
// Thread-safe; only the first call has an effect.
void DisableMutexDeadlockDetection();

}  // namespace distflow

#endif  // DISTFLOW_BASE_MUTEX_CHECKS_H_
