#include "distributed/rpc/same_host.h"

#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "distributed/rpc/grpc_util.h"

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
  size_t length = 0;
  for (const RemoteRange& r : ranges) length += r.length;
  char* dst = static_cast<char*>(out);
  // Progress: bytes copied, and the range and offset in it where the next
  // read starts (a read may stop early, at any byte).
  size_t done = 0, at = 0, into = 0;
  while (done < length) {
    iovec remote[kMaxRangesPerRead];
    size_t count = 0, n = 0;
    for (size_t i = at, skip = into;
         i < ranges.size() && count < kMaxRangesPerRead && n < kMaxBytesPerRead;
         ++i, skip = 0) {
      const size_t take =
          std::min(ranges[i].length - skip, kMaxBytesPerRead - n);
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
  size_t length = 0;
  for (const RemoteRange& r : ranges) length += r.length;
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

}  // namespace distflow
