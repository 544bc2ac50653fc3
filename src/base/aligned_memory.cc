#include "base/aligned_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace distflow {
namespace {

bool Huge(size_t size) { return size >= kMinHugePageBufferBytes; }

// The bytes of a huge buffer of `size` that go on huge pages (see
// kMinHugePageBufferBytes): whole huge pages, the last one possibly past
// `size`.
size_t HugePageBytes(size_t size) {
  size_t whole = size / kHugePageBytes * kHugePageBytes;
  if (size - whole >= kHugePageBytes / 2) whole += kHugePageBytes;
  return whole;
}

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
  const size_t huge = HugePageBytes(size);
  char* block =
      static_cast<char*>(std::malloc(std::max(size, huge) + kHugePageBytes));
  if (block == nullptr) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(block) + sizeof(void*);
  char* data = reinterpret_cast<char*>((start + kHugePageBytes - 1) &
                                       ~(kHugePageBytes - 1));
  std::memcpy(data - sizeof(void*), &block, sizeof(void*));
  // Advice only on memory of this block: on a huge page that crossed the
  // block's end the kernel could back other allocations' memory. A kernel
  // without transparent huge pages refuses the advice (EINVAL); the buffer
  // then stays on normal pages, which is correct, only slower.
  madvise(data, huge, MADV_HUGEPAGE);
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
