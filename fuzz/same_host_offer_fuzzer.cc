// A same-host offer's checks (src/distributed/rpc/same_host_offer.h) on an
// arbitrary PushTensorHeader: the plan they accept must never read past the
// tensor's bytes. Nothing is read from any process.
#include <cstddef>
#include <cstdint>

#include "distributed/rpc/same_host.h"
#include "distributed/rpc/same_host_offer.h"
#include "distributed/rpc/tensor_wire.h"
#include "proto/worker.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace distflow;  // NOLINT
  proto::PushTensorHeader header;
  if (!header.ParseFromArray(data, static_cast<int>(size))) return 0;
  absl::StatusOr<PushedTensorSpec> spec =
      CheckPushHeader(header, /*data_len=*/0);
  if (!spec.ok()) return 0;
  absl::StatusOr<SameHostPlan> plan =
      CheckSameHostOffer(header, spec->dtype, spec->shape);
  if (!plan.ok()) return 0;
  // The bytes a read would copy are exactly the tensor's.
  absl::StatusOr<size_t> bytes = RangeBytes(plan->ranges);
  if (!bytes.ok() || *bytes != plan->total) __builtin_trap();
  if (!plan->runs.empty() &&
      !CheckOfferedRuns(plan->runs, spec->dtype, spec->shape).ok()) {
    __builtin_trap();
  }
  // A split read's parts stay within them too.
  const size_t half = plan->total / 2;
  absl::StatusOr<size_t> first = RangeBytes(SubRanges(plan->ranges, 0, half));
  absl::StatusOr<size_t> second =
      RangeBytes(SubRanges(plan->ranges, half, plan->total));
  if (!first.ok() || !second.ok() || *first + *second != plan->total) {
    __builtin_trap();
  }
  return 0;
}
