// Flushing denormal floats to zero on the threads that run kernels.
//
// A float below 2^-126 in magnitude is denormal, and x86 cores take a
// microcode assist, a hundred cycles or more, for each arithmetic operation
// that reads or produces one. Training makes them: Adam's first moment decays
// by beta1 (0.9) every step its gradient is zero, so the weights of inputs
// that are rarely non-zero (the border pixels of an image) carry denormal
// moments after some 800 steps, and their updates then cost more than the
// rest of the step (docs/benchmarks.md, "Denormals"). With flushing on, such
// results and inputs count as zero, as TensorFlow's CPU kernels do; the
// values lost are below any precision training relies on.
#ifndef DISTFLOW_BASE_DENORMAL_H_
#define DISTFLOW_BASE_DENORMAL_H_

#include <cstdint>

namespace distflow {

// Turns flushing on for the calling thread (flush-to-zero and
// denormals-are-zero on x86, FZ on ARM; nothing elsewhere) for the life of
// the object, then puts the thread's previous mode back.
class ScopedFlushDenormal {
 public:
  ScopedFlushDenormal();
  ~ScopedFlushDenormal();
  ScopedFlushDenormal(const ScopedFlushDenormal&) = delete;
  ScopedFlushDenormal& operator=(const ScopedFlushDenormal&) = delete;

 private:
  uint64_t saved_;
};

// Turns flushing on for the calling thread for good (for threads that only
// run kernels: those of a ThreadPool).
void FlushDenormalsOnThisThread();

// Whether the calling thread flushes denormals now.
bool ThisThreadFlushesDenormals();

}  // namespace distflow

#endif  // DISTFLOW_BASE_DENORMAL_H_
