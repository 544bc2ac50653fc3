#include "distributed/rpc/same_host.h"

#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/logging.h"
#include "base/shared_arena.h"
#include "base/status_macros.h"
#include "core/gathered_tensor.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/same_host_offer.h"

namespace distflow {
namespace {

// One system call copies at most this much, so that a huge tensor is read in
// steps that each pin a bounded number of the sender's pages.
constexpr size_t kMaxBytesPerRead = size_t{64} << 20;
// Remote ranges per process_vm_readv call (the kernel takes up to IOV_MAX).
constexpr size_t kMaxRangesPerRead = 64;
// A read is split across threads only into parts of at least this many
// bytes. A helper pays off only while a core would otherwise idle; where the
// cores are busy (two workers and a ps on two cores) it only takes one from
// other work. Splitting the MLP's 0.94 MB transfers showed no gain there,
// while reads of megabytes took half the time (docs/benchmarks.md,
// "Same-host reads split across threads").
constexpr size_t kMinBytesPerPart = size_t{1} << 20;

std::string ComputeIdentity() {
  std::ifstream boot_id("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!std::getline(boot_id, id)) return "";
  id = std::string(absl::StripAsciiWhitespace(id));
  struct stat pid_ns;
  if (id.empty() || stat("/proc/self/ns/pid", &pid_ns) != 0) return "";
  return absl::StrCat(id, "/pidns:", pid_ns.st_dev, ":", pid_ns.st_ino);
}

}  // namespace

bool SameHostTransportAllowedByEnv() {
  return EnabledByEnv("DISTFLOW_SAME_HOST_TRANSPORT");
}

const std::string& SameHostIdentity() {
  static const std::string* const identity = new std::string(ComputeIdentity());
  return *identity;
}

absl::Status ReadProcessMemory(int64_t pid, uint64_t address, size_t length,
                               void* out) {
  const RemoteRange range{address, length};
  return ReadProcessMemory(pid, absl::MakeConstSpan(&range, 1), out);
}

absl::Status ReadProcessMemory(int64_t pid,
                               absl::Span<const RemoteRange> ranges,
                               void* out) {
  // (A sum that wrapped would size the reads below past `out`.)
  DF_ASSIGN_OR_RETURN(const size_t length, RangeBytes(ranges));
  if (pid <= 0 || pid > std::numeric_limits<pid_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read from process ", pid, ": no such pid"));
  }
  char* dst = static_cast<char*>(out);
  // Progress: bytes copied, and the range and offset in it where the next
  // read starts (a read may stop early, at any byte).
  size_t done = 0, at = 0, into = 0;
  while (done < length) {
    iovec remote[kMaxRangesPerRead];
    size_t count = 0, n = 0;
    // (Never more than the bytes left of `out`.)
    const size_t limit = std::min(kMaxBytesPerRead, length - done);
    for (size_t i = at, skip = into;
         i < ranges.size() && count < kMaxRangesPerRead && n < limit;
         ++i, skip = 0) {
      const size_t take = std::min(ranges[i].length - skip, limit - n);
      if (take == 0) continue;
      remote[count++] = {reinterpret_cast<void*>(ranges[i].address + skip),
                         take};
      n += take;
    }
    iovec local{dst + done, n};
    const ssize_t got =
        process_vm_readv(static_cast<pid_t>(pid), &local, 1, remote, count, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const int error = got < 0 ? errno : EFAULT;
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot read ", length, " bytes from process ", pid,
          " (process_vm_readv at byte ", done, ": ", std::strerror(error), ")",
          error == EPERM ? "; ptrace access between the processes is "
                           "not permitted (kernel.yama.ptrace_scope or "
                           "seccomp)"
                         : ""));
    }
    done += static_cast<size_t>(got);
    for (size_t left = static_cast<size_t>(got); left > 0;) {
      const size_t rest = ranges[at].length - into;
      if (left < rest) {
        into += left;
        break;
      }
      left -= rest;
      ++at;
      into = 0;
    }
  }
  return absl::OkStatus();
}

std::vector<RemoteRange> SubRanges(absl::Span<const RemoteRange> ranges,
                                   size_t begin, size_t end) {
  std::vector<RemoteRange> out;
  size_t at = 0;  // where the current range starts
  for (const RemoteRange& r : ranges) {
    const size_t from = std::max(begin, at), to = std::min(end, at + r.length);
    if (from < to) out.push_back({r.address + (from - at), to - from});
    at += r.length;
    if (at >= end) break;
  }
  return out;
}

absl::Status ReadProcessMemory(int64_t pid,
                               absl::Span<const RemoteRange> ranges, void* out,
                               ThreadPool* helpers) {
  DF_ASSIGN_OR_RETURN(const size_t length, RangeBytes(ranges));
  const size_t parts =
      helpers == nullptr
          ? 1
          : std::min({static_cast<size_t>(helpers->NumThreads()) + 1,
                      static_cast<size_t>(ThreadPool::HardwareThreads()),
                      length / kMinBytesPerPart});
  if (parts <= 1) return ReadProcessMemory(pid, ranges, out);

  // Part i is bytes [i * length / parts, (i + 1) * length / parts). This
  // thread and the helpers claim parts as they come (ThreadPool::RunParts),
  // so the read is never held up by a pool busy with other work.
  std::vector<absl::Status> results(parts);
  helpers->RunParts(static_cast<int64_t>(parts), [&](int64_t i) {
    const size_t begin = i * length / parts;
    const size_t end = (i + 1) * length / parts;
    results[i] = ReadProcessMemory(pid, SubRanges(ranges, begin, end),
                                   static_cast<char*>(out) + begin);
  });
  for (absl::Status& result : results) {
    if (!result.ok()) return result;
  }
  return absl::OkStatus();
}

bool SharedTensorsAllowedByEnv() {
  return EnabledByEnv("DISTFLOW_SHARED_TENSORS");
}

namespace {

// The arenas of the senders this process has taken tensors from, by (pid,
// token), or why one could not be attached (not tried again).
struct AttachedArenas {
  absl::Mutex mu;
  absl::flat_hash_map<std::pair<int64_t, uint64_t>,
                      absl::StatusOr<std::shared_ptr<AttachedArena>>>
      by_sender ABSL_GUARDED_BY(mu);
};

absl::StatusOr<std::shared_ptr<AttachedArena>> ArenaOf(int64_t pid, int fd,
                                                       uint64_t token) {
  static AttachedArenas* const arenas = new AttachedArenas;
  absl::MutexLock lock(&arenas->mu);
  auto found = arenas->by_sender.find({pid, token});
  if (found != arenas->by_sender.end()) return found->second;
  // A new sender: forget those that exited (their memory stays mapped only
  // while tensors over it live).
  for (auto it = arenas->by_sender.begin(); it != arenas->by_sender.end();) {
    if (!it->second.ok() || (*it->second)->OwnerGone()) {
      arenas->by_sender.erase(it++);
    } else {
      ++it;
    }
  }
  auto attached = AttachedArena::Attach(pid, fd, token);
  if (!attached.ok()) {
    DF_LOG(Warning) << "copying tensors from process " << pid
                    << " instead of mapping them: "
                    << attached.status().message();
  }
  arenas->by_sender.emplace(std::make_pair(pid, token), attached);
  return attached;
}

// Bytes of a sender's arena that a tensor of this process views: held (the
// block marked as read here) until the last Tensor over them goes away.
// Never written here (they are mapped read-only).
class HeldBlock : public TensorBuffer {
 public:
  HeldBlock(std::shared_ptr<AttachedArena> arena, uint32_t block,
            const char* data, size_t size)
      : arena_(std::move(arena)), block_(block), data_(data), size_(size) {}
  ~HeldBlock() override { arena_->Release(block_); }
  void* data() const override { return const_cast<char*>(data_); }
  size_t size() const override { return size_; }
  bool SharedWithOtherProcesses() const override { return true; }

 private:
  const std::shared_ptr<AttachedArena> arena_;
  const uint32_t block_;
  const char* const data_;
  const size_t size_;
};

}  // namespace

absl::StatusOr<Tensor> MapOfferedTensor(int64_t pid, int arena_fd,
                                        uint64_t arena_token,
                                        absl::Span<const OfferedRange> ranges,
                                        DataType dtype,
                                        const TensorShape& shape) {
  // (Every run a whole number of elements, their sum the tensor's bytes,
  // checked without overflow: the copies below are sized from them.)
  DF_RETURN_IF_ERROR(CheckOfferedRuns(ranges, dtype, shape).status());
  const size_t element = DataTypeSize(dtype);
  DF_ASSIGN_OR_RETURN(std::shared_ptr<AttachedArena> arena,
                      ArenaOf(pid, arena_fd, arena_token));
  // The runs in the arena are viewed where they lie; the others are copied
  // together, in one read, into one buffer whose slices take their places.
  std::vector<Tensor> parts(ranges.size());
  std::vector<RemoteRange> copied;
  size_t copied_bytes = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const OfferedRange& r = ranges[i];
    const int64_t n = static_cast<int64_t>(r.where.length / element);
    if (r.block < 0) {
      copied.push_back(r.where);
      copied_bytes += r.where.length;
      continue;
    }
    const uint32_t block = static_cast<uint32_t>(r.block);
    DF_ASSIGN_OR_RETURN(const char* data,
                        arena->Hold(block, r.arena_offset, r.where.length));
    parts[i] =
        Tensor(dtype, TensorShape({n}),
               std::make_shared<HeldBlock>(arena, block, data, r.where.length));
  }
  if (!copied.empty()) {
    DF_ASSIGN_OR_RETURN(
        Tensor local,
        Tensor::Create(
            dtype, TensorShape({static_cast<int64_t>(copied_bytes / element)}),
            /*zero=*/false));
    if (local.TotalBytes() != copied_bytes) {
      return absl::InternalError("a same-host copy buffer of the wrong size");
    }
    DF_RETURN_IF_ERROR(ReadProcessMemory(pid, copied, local.raw_data()));
    int64_t at = 0;
    for (size_t i = 0; i < ranges.size(); ++i) {
      if (ranges[i].block >= 0) continue;
      const int64_t n = static_cast<int64_t>(ranges[i].where.length / element);
      parts[i] = local.Slice(at, at + n);
      at += n;
    }
  }
  if (parts.size() == 1) return parts[0].Reshape(shape);
  DF_ASSIGN_OR_RETURN(Tensor gathered, GatherTensors(dtype, std::move(parts)));
  if (shape.dims() == 1) return gathered;
  return gathered.Reshape(shape);
}

}  // namespace distflow
