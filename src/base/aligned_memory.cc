#include "base/aligned_memory.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace distflow {
namespace {

bool Huge(size_t size) { return size >= kMinHugePageBufferBytes; }

}  // namespace

void* AllocateAligned(size_t size, size_t alignment) {
  if (!Huge(size)) {
    void* data = nullptr;
    return posix_memalign(&data, alignment, size) == 0 ? data : nullptr;
  }
  // A huge-page-aligned buffer cut out of a larger malloc block, whose start
  // is kept just before the buffer. Not posix_memalign: glibc serves a large
  // aligned request from a fresh mapping every time (its adaptive mmap
  // threshold never rises past the request), so every buffer would be faulted
  // in anew, at the cost of clearing its pages; a plain malloc block of the
  // same size is reused warm.
  char* block = static_cast<char*>(std::malloc(size + kHugePageBytes));
  if (block == nullptr) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(block) + sizeof(void*);
  char* data = reinterpret_cast<char*>((start + kHugePageBytes - 1) &
                                       ~(kHugePageBytes - 1));
  std::memcpy(data - sizeof(void*), &block, sizeof(void*));
  // Only whole huge pages inside the buffer: advice on a partial one would
  // let the kernel back memory past the buffer's end, which belongs to other
  // allocations, with the rest of that huge page. A kernel without
  // transparent huge pages refuses the advice (EINVAL); the buffer then stays
  // on normal pages, which is correct, only slower.
  madvise(data, size / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
  return data;
}

void FreeAligned(void* data, size_t size) {
  if (data == nullptr) return;
  if (!Huge(size)) {
    std::free(data);
    return;
  }
  void* block = nullptr;
  std::memcpy(&block, static_cast<char*>(data) - sizeof(void*), sizeof(void*));
  std::free(block);
}

}  // namespace distflow
