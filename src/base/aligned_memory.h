// Heap buffers for tensor data. Large buffers sit on transparent huge pages
// where the kernel allows them (THP "always" or "madvise"): a 2 MiB page
// costs one page-table entry where 4 KiB pages cost 512, which makes the
// copies between processes of the same-host transport (process_vm_readv pins
// every source page) about twice as fast, and cuts TLB misses of kernels that
// stream through large tensors. Fresh memory faults in faster on huge pages
// too (one fault clears 2 MiB). The price: a buffer may take up to half a
// huge page more memory than it asks for (see kMinHugePageBufferBytes), and
// the advice stays on the address range after the buffer is freed, so memory
// malloc later hands out from that range may be backed by huge pages as well.
#ifndef DISTFLOW_BASE_ALIGNED_MEMORY_H_
#define DISTFLOW_BASE_ALIGNED_MEMORY_H_

#include <cstddef>

namespace distflow {

// The huge page size of x86-64 and of most arm64 kernels.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Buffers of at least this many bytes are aligned to a huge page and offered
// to the kernel for huge pages: every whole huge page inside them, and the
// last, partial one too when the buffer fills at least half of it (so that a
// buffer takes at most half a huge page more memory than it asks for). A 1 MiB
// tensor thus takes 2 MiB; its copy to another process costs half as much.
inline constexpr size_t kMinHugePageBufferBytes = kHugePageBytes / 2;

// `size` (> 0) bytes aligned to at least `alignment` (a power of two, at most
// kHugePageBytes), or nullptr when memory runs out. Thread-safe.
void* AllocateAligned(size_t size, size_t alignment);

// Releases a buffer of AllocateAligned(size, ...), given the same `size`.
void FreeAligned(void* data, size_t size);

}  // namespace distflow

#endif  // DISTFLOW_BASE_ALIGNED_MEMORY_H_
