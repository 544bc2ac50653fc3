#include "base/denormal.h"

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace distflow {
namespace {

#if defined(__SSE__)
// MXCSR: flush-to-zero (bit 15) and denormals-are-zero (bit 6).
constexpr uint64_t kFlushBits = 0x8040;
uint64_t ReadMode() { return _mm_getcsr(); }
void WriteMode(uint64_t mode) { _mm_setcsr(static_cast<unsigned>(mode)); }
#elif defined(__aarch64__)
// FPCR: flush-to-zero (bit 24) covers inputs and results.
constexpr uint64_t kFlushBits = uint64_t{1} << 24;
uint64_t ReadMode() {
  uint64_t mode;
  asm volatile("mrs %0, fpcr" : "=r"(mode));
  return mode;
}
void WriteMode(uint64_t mode) { asm volatile("msr fpcr, %0" : : "r"(mode)); }
#else
constexpr uint64_t kFlushBits = 0;
uint64_t ReadMode() { return 0; }
void WriteMode(uint64_t) {}
#endif

}  // namespace

ScopedFlushDenormal::ScopedFlushDenormal() : saved_(ReadMode()) {
  // Writing the control register stalls the pipeline; skip it when the mode
  // is already set (a kernel thread's usual case).
  if ((saved_ & kFlushBits) != kFlushBits) WriteMode(saved_ | kFlushBits);
}

ScopedFlushDenormal::~ScopedFlushDenormal() {
  if ((saved_ & kFlushBits) != kFlushBits) WriteMode(saved_);
}

void FlushDenormalsOnThisThread() { WriteMode(ReadMode() | kFlushBits); }

bool ThisThreadFlushesDenormals() {
  return kFlushBits != 0 && (ReadMode() & kFlushBits) == kFlushBits;
}

}  // namespace distflow
