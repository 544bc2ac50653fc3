#include "base/aligned_memory.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>

namespace distflow {

void* AllocateAligned(size_t size, size_t alignment) {
  const bool huge = size >= kMinHugePageBufferBytes;
  void* data = nullptr;
  if (posix_memalign(&data, huge ? kHugePageBytes : alignment, size) != 0) {
    return nullptr;
  }
  if (huge) {
    // Only whole huge pages inside the buffer: advice on a partial one would
    // let the kernel back memory past the buffer's end, which belongs to
    // other allocations, with the rest of that huge page. A kernel without
    // transparent huge pages refuses the advice (EINVAL); the buffer then
    // stays on normal pages, which is correct, only slower.
    const size_t whole = size / kHugePageBytes * kHugePageBytes;
    madvise(data, whole, MADV_HUGEPAGE);
  }
  return data;
}

}  // namespace distflow
