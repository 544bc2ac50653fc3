// Tensor memory that other processes of this host can map, so that a tensor
// crosses between two tasks of one host without a copy.
//
// A task's arena is one memfd: a control region (a header with the readers'
// slots, and a table of blocks, each marked by the other processes that hold
// a tensor over it), then a data region of kSharedArenaDataBytes, sparse
// until touched. The owner cuts blocks for its large tensor buffers out of the
// data region (core/tensor.cc). To offer a tensor to a task of the same host,
// it names the block and the bytes; the receiver maps the arena once
// (pidfd_getfd(2) on the owner's descriptor), marks itself as a reader of the
// block and computes on the bytes where they lie. The owner reuses a block, and
// updates a variable in place, only while no other process reads it.
//
// Each reading process takes one of kSharedArenaMaxReaders slots and marks
// the blocks it holds with its slot's bit. When a reader dies (killed with
// SIGKILL, say), the owner finds its process gone and clears its bits, so
// that what it held is reused again.
#ifndef DISTFLOW_BASE_SHARED_ARENA_H_
#define DISTFLOW_BASE_SHARED_ARENA_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace distflow {

// Buffers of at least this many bytes come from the arena (where one is
// enabled); smaller ones cost less to copy than to map and count.
inline constexpr size_t kMinSharedBlockBytes = size_t{64} << 10;
// Larger buffers stay on the heap, on huge pages, and cross tasks by a copy
// (at 8-9 GB/s between two processes here). Saving a checkpoint of 32 MiB
// variables from arena blocks took twice as long as from the heap in
// checkpoint_bench (the same writes alone took as long from either), and in
// a training step tensors this large seldom cross tasks.
inline constexpr size_t kMaxSharedBlockBytes = size_t{16} << 20;
// The data region's size: address space only, memory is used as touched.
// Buffers once it is used up come from the heap too.
inline constexpr uint64_t kSharedArenaDataBytes = uint64_t{64} << 30;
// Most blocks an arena cuts; the block table takes 32 bytes per block.
inline constexpr uint32_t kSharedArenaMaxBlocks = 1 << 16;
// Processes that may read one arena at a time (a bit each in a block's
// mask). A reader beyond them copies instead of mapping.
inline constexpr int kSharedArenaMaxReaders = 64;
// Idle blocks an arena keeps warm for reuse; blocks freed beyond it give
// their memory back to the system (and are faulted in again when reused).
// Faulting in is dearer here than on the heap: the memory is on 4 KiB pages
// (the kernel gives shared memory huge pages only where configured to), and
// a fresh 32 MiB block took 21-23 ms to fill against 7.7 ms for heap memory
// on huge pages and 5 ms for a block filled before. As much as the receive
// buffers of a task keep (recv_buffer_pool.h).
inline constexpr size_t kSharedArenaMaxIdleBytes = size_t{1} << 30;

// One entry of the block table, shared by the owner and its readers.
struct SharedBlockEntry {
  // Bit i set: the reader in slot i holds a tensor over the block.
  std::atomic<uint64_t> reader_mask;
  uint64_t start;  // the block's first byte, from the data region's start
  uint64_t capacity;
  uint64_t reserved;
};
static_assert(sizeof(SharedBlockEntry) == 32);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

// A reader's slot, shared by the owner and its readers: the reader's pid
// (0: free) and its start time (/proc/<pid>/stat, field 22), which tell a
// live reader from a dead one whose pid was reused.
struct SharedReaderSlot {
  std::atomic<int64_t> pid;
  std::atomic<uint64_t> start_time;
};
static_assert(sizeof(SharedReaderSlot) == 16);

// The process's own arena: where its large tensor buffers come from.
class SharedArena {
 public:
  // The process's arena once Enable() succeeded; nullptr before. A child
  // forked after shares the arena's memory with its parent, so the arena is
  // not the child's: there it cuts and frees no blocks, and Get() is null
  // until the child enables its own.
  static SharedArena* Get();
  // Creates the process's arena (later calls do nothing). An error (no
  // memfd on this system) leaves Get() null: buffers then stay on the heap.
  static absl::Status Enable();

  // A block of at least `size` bytes, aligned to a page: its index, or -1
  // when the arena cannot serve it (more than kMaxSharedBlockBytes, address
  // space or block table used up). Thread-safe, as are the others.
  int64_t Allocate(size_t size);
  char* data(uint32_t block) const;
  // Gives the block back; it is reused once no other process reads it.
  void Free(uint32_t block);
  // Whether another process holds a tensor over the block.
  bool ReadElsewhere(uint32_t block) const;

  // Where `length` bytes at `p` lie, when a block of this arena holds them
  // all: the block and their offset from the data region's start.
  bool Locate(const void* p, size_t length, uint32_t* block,
              uint64_t* offset) const;

  int fd() const { return fd_; }
  uint64_t token() const { return token_; }
  // Blocks cut so far, and idle ones waiting for reuse (for tests).
  size_t blocks() const;
  size_t idle_blocks() const;

  // Frees the slots of readers whose processes are gone and clears their
  // bits, making blocks they held reusable. Freeing a block that another
  // process reads runs this at most once a second; callers that know a
  // reader died may run it at once.
  void ReclaimDeadReaders();

 private:
  SharedArena(int fd, uint64_t token, char* control, char* data_region);
  // Whether this process made the arena (not a forked child of it).
  bool Owned() const;
  SharedBlockEntry& entry(uint32_t block) const;
  // Moves blocks whose readers let go from deferred_ to the idle lists.
  void SweepDeferred() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReclaimDeadReadersLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MakeIdle(uint32_t block) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int owner_;  // the pid
  const int fd_;
  const uint64_t token_;
  char* const control_;
  char* const data_region_;
  mutable absl::Mutex mu_;
  uint64_t next_start_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t next_block_ ABSL_GUARDED_BY(mu_) = 0;
  // Idle blocks by capacity, and the bytes of those whose pages are kept.
  std::map<uint64_t, std::vector<uint32_t>> idle_ ABSL_GUARDED_BY(mu_);
  size_t idle_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // Whether an idle block kept its memory (counted in idle_bytes_).
  std::vector<bool> kept_ ABSL_GUARDED_BY(mu_) =
      std::vector<bool>(kSharedArenaMaxBlocks);
  // Freed blocks that another process still reads.
  std::vector<uint32_t> deferred_ ABSL_GUARDED_BY(mu_);
  // When SweepDeferred last looked for dead readers (steady clock, ns).
  int64_t last_reclaim_ns_ ABSL_GUARDED_BY(mu_) = 0;
  // Block start -> index, for Locate.
  std::map<uint64_t, uint32_t> by_start_ ABSL_GUARDED_BY(mu_);
};

// Another process's arena, mapped into this one: its data region read-only,
// its block table and reader slots writable.
class AttachedArena {
 public:
  // Maps the arena whose descriptor is `fd` in process `pid` (of this host
  // and pid namespace), checks that it is the one named `token` and takes a
  // reader slot. FAILED_PRECONDITION naming the pid and the reason when it
  // cannot (pidfd_getfd not permitted or not supported, the process gone,
  // every reader slot taken).
  static absl::StatusOr<std::shared_ptr<AttachedArena>> Attach(int64_t pid,
                                                               int fd,
                                                               uint64_t token);
  ~AttachedArena();

  // Marks this process as a reader of `block` and returns its bytes
  // [offset, offset + length) (offset from the data region's start).
  // INVALID_ARGUMENT naming the block when the bytes are not inside it.
  absl::StatusOr<const char*> Hold(uint32_t block, uint64_t offset,
                                   uint64_t length);
  // Ends a hold of Hold().
  void Release(uint32_t block);
  // Whether the owner has exited.
  bool OwnerGone() const;

 private:
  AttachedArena(int pidfd, char* control, char* data_region, int slot);
  SharedBlockEntry& entry(uint32_t block) const;
  SharedReaderSlot& slot() const;

  const int pidfd_;
  char* const control_;
  char* const data_region_;
  const int slot_;
  // The process that took the slot (a forked child's holds are not its).
  const int holder_;
  absl::Mutex mu_;
  // This process's holds per block: the bit is set while any lasts.
  std::map<uint32_t, int> holds_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distflow

#endif  // DISTFLOW_BASE_SHARED_ARENA_H_
