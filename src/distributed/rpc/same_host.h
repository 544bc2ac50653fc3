// The same-host path for pushed tensors: when the producing and the consuming
// task run on one machine, the consumer copies a tensor's bytes straight out
// of the producer's memory with process_vm_readv(2) instead of receiving them
// over TCP. This file holds what that needs from the operating system; the
// protocol is in tensor_wire.h and grpc_remote_worker.cc.
#ifndef DISTFLOW_DISTRIBUTED_RPC_SAME_HOST_H_
#define DISTFLOW_DISTRIBUTED_RPC_SAME_HOST_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "base/thread_pool.h"
#include "distflow/tensor.h"

namespace distflow {

// Tensors smaller than this travel inline: below it a copy through the
// connection costs less than the system call and its page pinning.
inline constexpr int64_t kMinSameHostBytes = int64_t{64} << 10;

// False when the environment variable DISTFLOW_SAME_HOST_TRANSPORT is "0"
// (forces the TCP path, for example to measure it or to test it).
bool SameHostTransportAllowedByEnv();

// This process's host and pid namespace, "<boot id>/pidns:<inode>": two
// processes with the same identity can name each other by pid. Empty when
// /proc does not tell (the same-host path is then never used).
const std::string& SameHostIdentity();

// Copies `length` bytes at `address` in process `pid` (on this host) into
// `out`. FAILED_PRECONDITION naming the pid and the system's reason when the
// read is not possible (EPERM under a restrictive ptrace policy or seccomp,
// ESRCH for a pid of another namespace, EFAULT for an unmapped address).
absl::Status ReadProcessMemory(int64_t pid, uint64_t address, size_t length,
                               void* out);

// The same for bytes that lie in several places in process `pid`: copies
// each range in turn into `out`, end to end, in as few system calls as the
// ranges allow.
struct RemoteRange {
  uint64_t address = 0;
  size_t length = 0;
};
absl::Status ReadProcessMemory(int64_t pid,
                               absl::Span<const RemoteRange> ranges, void* out);

// The same, split across `helpers` and the calling thread when the bytes are
// many (2 MiB or more): one core copies memory at a fraction of what the
// machine can, and the sender's task, waiting for this one, leaves its cores
// idle. Reads on this thread alone when `helpers` is null or the bytes are
// fewer.
absl::Status ReadProcessMemory(int64_t pid,
                               absl::Span<const RemoteRange> ranges, void* out,
                               ThreadPool* helpers);

// The part of `ranges` (laid end to end) from byte `begin` to byte `end`.
std::vector<RemoteRange> SubRanges(absl::Span<const RemoteRange> ranges,
                                   size_t begin, size_t end);

// Tensors offered out of the sender's tensor arena (base/shared_arena.h):
// instead of copying, the receiver maps the arena and computes on the bytes
// where they lie, holding them until its last Tensor over them goes away.
//
// One run of an offered tensor's bytes in the sender, and the arena block
// that holds it (-1: not in the arena; those runs are copied).
struct OfferedRange {
  RemoteRange where;
  int64_t block = -1;
  uint64_t arena_offset = 0;
};
// The offered tensor of `dtype` and `shape`, whose bytes are `ranges` laid
// end to end, over the sender's arena (attached once per sender and kept
// while it lives). FAILED_PRECONDITION (the caller copies instead) when the
// arena cannot be mapped; INVALID_ARGUMENT for an offer that names bytes
// outside its blocks or runs of partial elements.
absl::StatusOr<Tensor> MapOfferedTensor(int64_t pid, int arena_fd,
                                        uint64_t arena_token,
                                        absl::Span<const OfferedRange> ranges,
                                        DataType dtype,
                                        const TensorShape& shape);

// False when DISTFLOW_SHARED_TENSORS is "0": tasks then keep their tensors on
// the heap and copy them between processes (to measure, or to rule the
// mapping out).
bool SharedTensorsAllowedByEnv();

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_SAME_HOST_H_
