#include "distributed/rpc/same_host_offer.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "base/logging.h"

namespace distflow {
namespace {

absl::Status Invalid(const proto::PushTensorHeader& header,
                     const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(
      "PushTensor '", header.key(), "': its same-host offer ", what));
}

// Whether [address, address + length) wraps past the end of the address
// space.
bool Wraps(uint64_t address, uint64_t length) {
  return length > std::numeric_limits<uint64_t>::max() - address;
}

}  // namespace

absl::StatusOr<size_t> RangeBytes(absl::Span<const RemoteRange> ranges) {
  size_t sum = 0;
  for (const RemoteRange& r : ranges) {
    if (r.length > kMaxTensorBytes - sum) {
      return absl::InvalidArgumentError(
          absl::StrCat(ranges.size(), " same-host ranges of more than ",
                       kMaxTensorBytes, " bytes in all"));
    }
    sum += r.length;
  }
  return sum;
}

absl::StatusOr<size_t> CheckOfferedRuns(absl::Span<const OfferedRange> runs,
                                        DataType dtype,
                                        const TensorShape& shape) {
  absl::StatusOr<size_t> want = TensorByteSize(dtype, shape);
  if (!want.ok()) return absl::InvalidArgumentError(want.status().message());
  const size_t element = DataTypeSize(dtype);
  size_t total = 0;
  for (const OfferedRange& r : runs) {
    if (element == 0 || r.where.length % element != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("a same-host run of ", r.where.length,
                       " bytes is not a whole number "
                       "of ",
                       DataTypeName(dtype), " elements"));
    }
    if (r.where.length > *want - total) {
      return absl::InvalidArgumentError(absl::StrCat(
          "same-host runs of more than ", *want, " bytes do not hold a ",
          DataTypeName(dtype), " tensor of shape ", shape.DebugString()));
    }
    total += r.where.length;
  }
  if (runs.empty() || total != *want) {
    return absl::InvalidArgumentError(
        absl::StrCat(runs.size(), " same-host runs of ", total,
                     " bytes in all do not hold a ", DataTypeName(dtype),
                     " tensor of shape ", shape.DebugString()));
  }
  return total;
}

absl::StatusOr<SameHostPlan> CheckSameHostOffer(
    const proto::PushTensorHeader& header, DataType dtype,
    const TensorShape& shape) {
  const proto::SameHostTensor& where = header.same_host();
  absl::StatusOr<size_t> bytes = TensorByteSize(dtype, shape);
  if (!bytes.ok()) {
    return absl::Status(bytes.status().code(),
                        absl::StrCat("PushTensor '", header.key(),
                                     "': ", bytes.status().message()));
  }
  SameHostPlan plan;
  plan.total = *bytes;
  if (header.total_bytes() < 0 ||
      static_cast<uint64_t>(header.total_bytes()) != plan.total) {
    return Invalid(header, absl::StrCat("says ", header.total_bytes(),
                                        " bytes for a tensor of ", plan.total));
  }
  // (A pid_t; 0 and negative pids name process groups, or no process.)
  if (where.pid() <= 0 || where.pid() > std::numeric_limits<int32_t>::max()) {
    return Invalid(header, absl::StrCat("names process ", where.pid(),
                                        ", which cannot be a process"));
  }
  plan.pid = where.pid();
  if (where.ranges().empty()) {
    if (where.arena_token() != 0) {
      return Invalid(header, "names an arena but lists no runs in it");
    }
    if (Wraps(where.address(), plan.total)) {
      return Invalid(header, absl::StrCat("has ", plan.total,
                                          " bytes at an address where they "
                                          "wrap around"));
    }
    if (plan.total > 0) plan.ranges.push_back({where.address(), plan.total});
    return plan;
  }
  if (where.ranges_size() > kMaxSameHostRanges) {
    return Invalid(
        header, absl::StrCat("lists ", where.ranges_size(), " ranges (at most ",
                             kMaxSameHostRanges, " are allowed)"));
  }
  const bool arena = where.arena_token() != 0;
  if (arena && where.arena_fd() < 0) {
    return Invalid(header, absl::StrCat("names descriptor ", where.arena_fd(),
                                        " for its arena"));
  }
  plan.ranges.reserve(static_cast<size_t>(where.ranges_size()));
  // (Each length is checked against what is left, so no sum overflows.)
  size_t sum = 0;
  for (const proto::SameHostRange& r : where.ranges()) {
    if (r.length() > plan.total - sum) {
      return Invalid(header,
                     absl::StrCat("has ranges of more than the tensor's ",
                                  plan.total, " bytes"));
    }
    if (Wraps(r.address(), r.length()) ||
        (r.has_arena_block() && Wraps(r.arena_offset(), r.length()))) {
      return Invalid(header, absl::StrCat("has a range of ", r.length(),
                                          " bytes that wraps around"));
    }
    sum += r.length();
    plan.ranges.push_back({r.address(), static_cast<size_t>(r.length())});
    if (arena) {
      plan.runs.push_back({plan.ranges.back(),
                           r.has_arena_block() ? int64_t{r.arena_block()} : -1,
                           r.arena_offset()});
    }
  }
  if (sum != plan.total) {
    return Invalid(header,
                   absl::StrCat("has ranges of ", sum, " bytes, not the ",
                                plan.total, " of the tensor"));
  }
  if (arena) {
    absl::StatusOr<size_t> runs = CheckOfferedRuns(plan.runs, dtype, shape);
    if (!runs.ok())
      return Invalid(header, std::string(runs.status().message()));
    plan.arena_fd = where.arena_fd();
    plan.arena_token = where.arena_token();
  }
  return plan;
}

std::string SameHostMismatch(const proto::PushTensorHeader& header) {
  const std::string& ours = SameHostIdentity();
  const std::string& theirs = header.same_host().host_id();
  if (!ours.empty() && theirs == ours) return std::string();
  DF_LOG(Info) << "PushTensor '" << header.key()
               << "': not reading a same-host offer from host and pid "
                  "namespace '"
               << theirs << "' (this task's: '" << ours << "')";
  return ours.empty()
             ? "this task cannot tell its host and pid namespace"
             : "the sender runs on another host or in another pid namespace";
}

std::string SameHostReadRefusal(const proto::PushTensorHeader& header,
                                const absl::Status& read) {
  DF_LOG(Warning) << "PushTensor '" << header.key()
                  << "': refusing its same-host offer: " << read.message();
  return absl::StrCat("cannot read the bytes of '", header.key(),
                      "' from process ", header.same_host().pid(),
                      " (the receiving task's log says why)");
}

}  // namespace distflow
