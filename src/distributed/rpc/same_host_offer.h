// Checking a same-host offer (same_host.h) before any byte of its sender is
// read. An offer names a process, addresses and lengths, and comes from the
// network: every length is checked against the tensor's size (TensorByteSize)
// with sums that cannot overflow, so that no read is sized from a wrapped
// sum; and what is sent back when an offer is refused says what was wrong
// without this host's identity or the system's error text (those are logged
// here). The same_host_offer fuzz target runs these checks.
#ifndef DISTFLOW_DISTRIBUTED_RPC_SAME_HOST_OFFER_H_
#define DISTFLOW_DISTRIBUTED_RPC_SAME_HOST_OFFER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "distflow/tensor.h"
#include "distributed/rpc/same_host.h"
#include "proto/worker.pb.h"

namespace distflow {

// The most runs an offer may list (a packed transfer lists one per member).
inline constexpr int kMaxSameHostRanges = 1 << 16;

// What a checked offer has the receiver read: `total` bytes (the tensor's
// TensorByteSize) in process `pid`, at `ranges` laid end to end, whose
// lengths add up to `total`. For an offer out of the sender's tensor arena,
// `runs` lists the same ranges with their blocks (empty otherwise).
struct SameHostPlan {
  int64_t pid = 0;
  size_t total = 0;
  std::vector<RemoteRange> ranges;
  std::vector<OfferedRange> runs;
  int arena_fd = -1;
  uint64_t arena_token = 0;
};

// Checks the same-host offer `header` (whose dtype and shape CheckPushHeader
// has read) for a tensor of `dtype` and `shape`: INVALID_ARGUMENT naming the
// tensor for a pid that names no process, ranges whose lengths overflow or do
// not add up to the tensor's bytes, too many ranges, a range that wraps the
// address space, or arena runs of partial elements; RESOURCE_EXHAUSTED for a
// tensor over kMaxTensorBytes. Reads nothing.
absl::StatusOr<SameHostPlan> CheckSameHostOffer(
    const proto::PushTensorHeader& header, DataType dtype,
    const TensorShape& shape);

// Empty when the offer's sender shares this process's host and pid
// namespace; otherwise the refusal to send back, which names neither
// identity (both are logged).
std::string SameHostMismatch(const proto::PushTensorHeader& header);

// The refusal to send back when reading the sender's bytes failed with
// `read`: it names the tensor and the process, not the system's reason,
// which would tell the peer about this host's processes (it is logged).
std::string SameHostReadRefusal(const proto::PushTensorHeader& header,
                                const absl::Status& read);

// The bytes of `ranges` laid end to end; INVALID_ARGUMENT when their sum
// overflows or exceeds kMaxTensorBytes.
absl::StatusOr<size_t> RangeBytes(absl::Span<const RemoteRange> ranges);

// Checks the runs of an arena offer against a tensor of `dtype` and `shape`
// (the first step of MapOfferedTensor): their bytes, which must be
// TensorByteSize's, each run a whole number of elements. INVALID_ARGUMENT
// otherwise, with sums that cannot overflow.
absl::StatusOr<size_t> CheckOfferedRuns(absl::Span<const OfferedRange> runs,
                                        DataType dtype,
                                        const TensorShape& shape);

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_SAME_HOST_OFFER_H_
