#include "base/shared_arena.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace distflow {
namespace {

constexpr uint64_t kPageBytes = 4096;
constexpr char kMagic[8] = {'d', 'f', 'a', 'r', 'e', 'n', 'a', '1'};

// The control region: a header page, then the block table.
struct ArenaHeader {
  char magic[8];
  uint64_t token;
  uint64_t data_bytes;
  uint64_t max_blocks;
};
// The reader slots follow the header in its page.
constexpr uint64_t kSlotsOffset = 64;
static_assert(kSlotsOffset +
                  kSharedArenaMaxReaders * sizeof(SharedReaderSlot) <=
              kPageBytes);
constexpr uint64_t kTableOffset = kPageBytes;
constexpr uint64_t kControlBytes =
    kTableOffset + uint64_t{kSharedArenaMaxBlocks} * sizeof(SharedBlockEntry);
static_assert(kControlBytes % kPageBytes == 0);

// Blocks come in sizes of whole pages, four sizes per power of two (at most
// a quarter of a block unused), so that a freed block serves the next
// tensor of about its size: training allocates the same sizes every step.
uint64_t CapacityFor(size_t size) {
  const uint64_t pages = (size + kPageBytes - 1) / kPageBytes;
  if (pages < 4) return pages * kPageBytes;
  const int k = 63 - __builtin_clzll(pages);
  const uint64_t step = (uint64_t{1} << k) / 4;
  return (pages + step - 1) / step * step * kPageBytes;
}

absl::Mutex enable_mu;
SharedArena* arena ABSL_GUARDED_BY(enable_mu) = nullptr;
std::atomic<SharedArena*> published{nullptr};

absl::Status ErrnoError(const std::string& what) {
  return absl::FailedPreconditionError(
      absl::StrCat(what, ": ", std::strerror(errno)));
}

SharedReaderSlot* Slots(char* control) {
  return reinterpret_cast<SharedReaderSlot*>(control + kSlotsOffset);
}

// When process `pid` started (clock ticks after boot, /proc/<pid>/stat field
// 22); 0 when it does not exist or has exited (a zombie).
uint64_t ProcessStartTime(int64_t pid) {
  std::ifstream file(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat;
  if (!std::getline(file, stat)) return 0;
  // The command name (field 2) is in parentheses and may hold spaces.
  const size_t name_end = stat.rfind(')');
  if (name_end == std::string::npos) return 0;
  std::istringstream rest(stat.substr(name_end + 1));
  std::string state;
  rest >> state;  // field 3
  if (state == "Z" || state == "X") return 0;
  std::string field;
  for (int i = 4; i <= 22; ++i) rest >> field;
  uint64_t start = 0;
  return absl::SimpleAtoi(field, &start) ? start : 0;
}

}  // namespace

SharedArena::SharedArena(int fd, uint64_t token, char* control,
                         char* data_region)
    : owner_(getpid()),
      fd_(fd),
      token_(token),
      control_(control),
      data_region_(data_region) {}

SharedArena* SharedArena::Get() {
  SharedArena* a = published.load(std::memory_order_acquire);
  return a != nullptr && a->Owned() ? a : nullptr;
}

bool SharedArena::Owned() const { return getpid() == owner_; }

absl::Status SharedArena::Enable() {
  absl::MutexLock lock(&enable_mu);
  // (A forked child inherits its parent's arena, which is not its own.)
  if (arena != nullptr && arena->Owned()) return absl::OkStatus();
  const int fd = memfd_create("distflow-tensors", MFD_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot create the tensor arena (memfd)");
  if (ftruncate(fd, kControlBytes + kSharedArenaDataBytes) != 0) {
    const absl::Status error = ErrnoError("cannot size the tensor arena");
    close(fd);
    return error;
  }
  void* control =
      mmap(nullptr, kControlBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  void* data = mmap(nullptr, kSharedArenaDataBytes, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_NORESERVE, fd, kControlBytes);
  if (control == MAP_FAILED || data == MAP_FAILED) {
    const absl::Status error = ErrnoError("cannot map the tensor arena");
    if (control != MAP_FAILED) munmap(control, kControlBytes);
    if (data != MAP_FAILED) munmap(data, kSharedArenaDataBytes);
    close(fd);
    return error;
  }
  std::random_device device;
  const uint64_t token =
      (uint64_t{device()} << 32 | device()) ^ static_cast<uint64_t>(getpid());
  auto* header = static_cast<ArenaHeader*>(control);
  std::memcpy(header->magic, kMagic, sizeof(kMagic));
  header->token = token;
  header->data_bytes = kSharedArenaDataBytes;
  header->max_blocks = kSharedArenaMaxBlocks;
  arena = new SharedArena(fd, token, static_cast<char*>(control),
                          static_cast<char*>(data));
  published.store(arena, std::memory_order_release);
  return absl::OkStatus();
}

SharedBlockEntry& SharedArena::entry(uint32_t block) const {
  return reinterpret_cast<SharedBlockEntry*>(control_ + kTableOffset)[block];
}

char* SharedArena::data(uint32_t block) const {
  return data_region_ + entry(block).start;
}

int64_t SharedArena::Allocate(size_t size) {
  if (!Owned()) return -1;
  const uint64_t capacity = CapacityFor(size);
  if (capacity > kMaxSharedBlockBytes) return -1;
  absl::MutexLock lock(&mu_);
  if (!deferred_.empty()) SweepDeferred();
  auto idle = idle_.find(capacity);
  if (idle != idle_.end() && !idle->second.empty()) {
    const uint32_t block = idle->second.back();
    idle->second.pop_back();
    if (kept_[block]) idle_bytes_ -= capacity;
    return block;
  }
  if (next_block_ == kSharedArenaMaxBlocks ||
      next_start_ + capacity > kSharedArenaDataBytes) {
    return -1;
  }
  const uint32_t block = next_block_++;
  SharedBlockEntry& e = entry(block);
  e.reader_mask.store(0, std::memory_order_relaxed);
  e.start = next_start_;
  e.capacity = capacity;
  by_start_[next_start_] = block;
  next_start_ += capacity;
  return block;
}

void SharedArena::Free(uint32_t block) {
  if (!Owned()) return;  // inherited by a forked child: the parent's block
  absl::MutexLock lock(&mu_);
  if (ReadElsewhere(block)) {
    deferred_.push_back(block);
  } else {
    MakeIdle(block);
  }
  if (!deferred_.empty()) SweepDeferred();
}

void SharedArena::SweepDeferred() {
  const int64_t now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count();
  if (now_ns - last_reclaim_ns_ >= 1'000'000'000) {
    last_reclaim_ns_ = now_ns;
    ReclaimDeadReadersLocked();
  }
  for (size_t i = 0; i < deferred_.size();) {
    if (ReadElsewhere(deferred_[i])) {
      ++i;
      continue;
    }
    MakeIdle(deferred_[i]);
    deferred_[i] = deferred_.back();
    deferred_.pop_back();
  }
}

void SharedArena::MakeIdle(uint32_t block) {
  const SharedBlockEntry& e = entry(block);
  kept_[block] = idle_bytes_ + e.capacity <= kSharedArenaMaxIdleBytes;
  if (kept_[block]) {
    idle_bytes_ += e.capacity;
  } else {
    // Past the idle limit: keep the block's place, give its memory back
    // (its next user faults it in again).
    fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
              static_cast<off_t>(kControlBytes + e.start),
              static_cast<off_t>(e.capacity));
  }
  idle_[e.capacity].push_back(block);
}

bool SharedArena::ReadElsewhere(uint32_t block) const {
  return entry(block).reader_mask.load(std::memory_order_acquire) != 0;
}

void SharedArena::ReclaimDeadReaders() {
  absl::MutexLock lock(&mu_);
  ReclaimDeadReadersLocked();
  SweepDeferred();
}

void SharedArena::ReclaimDeadReadersLocked() {
  if (!Owned()) return;
  SharedReaderSlot* slots = Slots(control_);
  for (int i = 0; i < kSharedArenaMaxReaders; ++i) {
    const int64_t pid = slots[i].pid.load(std::memory_order_acquire);
    const uint64_t started =
        slots[i].start_time.load(std::memory_order_acquire);
    // (A start time of 0: the slot is being taken.)
    if (pid == 0 || started == 0 || ProcessStartTime(pid) == started) continue;
    const uint64_t others = ~(uint64_t{1} << i);
    for (uint32_t b = 0; b < next_block_; ++b) {
      entry(b).reader_mask.fetch_and(others, std::memory_order_acq_rel);
    }
    slots[i].start_time.store(0, std::memory_order_relaxed);
    slots[i].pid.store(0, std::memory_order_release);
  }
}

bool SharedArena::Locate(const void* p, size_t length, uint32_t* block,
                         uint64_t* offset) const {
  const char* c = static_cast<const char*>(p);
  if (c < data_region_ || c >= data_region_ + kSharedArenaDataBytes) {
    return false;
  }
  const uint64_t at = static_cast<uint64_t>(c - data_region_);
  absl::MutexLock lock(&mu_);
  auto it = by_start_.upper_bound(at);
  if (it == by_start_.begin()) return false;
  --it;
  const SharedBlockEntry& e = entry(it->second);
  if (at + length > e.start + e.capacity) return false;
  *block = it->second;
  *offset = at;
  return true;
}

size_t SharedArena::blocks() const {
  absl::MutexLock lock(&mu_);
  return next_block_;
}

size_t SharedArena::idle_blocks() const {
  absl::MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [capacity, blocks] : idle_) n += blocks.size();
  return n;
}

absl::StatusOr<std::shared_ptr<AttachedArena>> AttachedArena::Attach(
    int64_t pid, int fd, uint64_t token) {
  const std::string whose = absl::StrCat("the tensor arena of process ", pid);
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return ErrnoError(absl::StrCat("cannot open ", whose));
  const int local = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  if (local < 0) {
    const absl::Status error = ErrnoError(absl::StrCat(
        "cannot take ", whose, " (pidfd_getfd of descriptor ", fd,
        errno == EPERM ? "; ptrace access between the processes is not "
                         "permitted)"
                       : ")"));
    close(pidfd);
    return error;
  }
  struct stat st;
  void* control = MAP_FAILED;
  if (fstat(local, &st) == 0 && static_cast<uint64_t>(st.st_size) ==
                                    kControlBytes + kSharedArenaDataBytes) {
    control = mmap(nullptr, kControlBytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                   local, 0);
  }
  const auto* header = static_cast<const ArenaHeader*>(control);
  if (control == MAP_FAILED ||
      std::memcmp(header->magic, kMagic, sizeof(kMagic)) != 0 ||
      header->token != token) {
    if (control != MAP_FAILED) munmap(control, kControlBytes);
    close(local);
    close(pidfd);
    return absl::FailedPreconditionError(absl::StrCat(
        "descriptor ", fd, " of process ", pid,
        " is not the tensor arena it offered (the process was replaced?)"));
  }
  void* data = mmap(nullptr, kSharedArenaDataBytes, PROT_READ,
                    MAP_SHARED | MAP_NORESERVE, local, kControlBytes);
  close(local);  // the mappings keep the memory
  if (data == MAP_FAILED) {
    const absl::Status error = ErrnoError(absl::StrCat("cannot map ", whose));
    munmap(control, kControlBytes);
    close(pidfd);
    return error;
  }
  SharedReaderSlot* slots = Slots(static_cast<char*>(control));
  for (int i = 0; i < kSharedArenaMaxReaders; ++i) {
    int64_t free = 0;
    if (slots[i].pid.compare_exchange_strong(free, getpid(),
                                             std::memory_order_acq_rel)) {
      slots[i].start_time.store(ProcessStartTime(getpid()),
                                std::memory_order_release);
      return std::shared_ptr<AttachedArena>(new AttachedArena(
          pidfd, static_cast<char*>(control), static_cast<char*>(data), i));
    }
  }
  munmap(data, kSharedArenaDataBytes);
  munmap(control, kControlBytes);
  close(pidfd);
  return absl::FailedPreconditionError(
      absl::StrCat("every one of the ", kSharedArenaMaxReaders,
                   " reader slots of ", whose, " is taken"));
}

AttachedArena::AttachedArena(int pidfd, char* control, char* data_region,
                             int slot)
    : pidfd_(pidfd),
      control_(control),
      data_region_(data_region),
      slot_(slot),
      holder_(getpid()) {}

AttachedArena::~AttachedArena() {
  if (getpid() == holder_) {  // (the slot is not a forked child's to free)
    slot().start_time.store(0, std::memory_order_relaxed);
    slot().pid.store(0, std::memory_order_release);
  }
  munmap(data_region_, kSharedArenaDataBytes);
  munmap(control_, kControlBytes);
  close(pidfd_);
}

SharedBlockEntry& AttachedArena::entry(uint32_t block) const {
  return reinterpret_cast<SharedBlockEntry*>(control_ + kTableOffset)[block];
}

SharedReaderSlot& AttachedArena::slot() const { return Slots(control_)[slot_]; }

absl::StatusOr<const char*> AttachedArena::Hold(uint32_t block, uint64_t offset,
                                                uint64_t length) {
  if (block >= kSharedArenaMaxBlocks) {
    return absl::InvalidArgumentError(absl::StrCat("tensor arena block ", block,
                                                   " does not exist (at most ",
                                                   kSharedArenaMaxBlocks, ")"));
  }
  SharedBlockEntry& e = entry(block);
  if (offset < e.start || length > e.capacity ||
      offset - e.start > e.capacity - length ||
      offset > kSharedArenaDataBytes - length) {
    return absl::InvalidArgumentError(
        absl::StrCat("bytes [", offset, ", +", length,
                     ") are not inside tensor arena block ", block, " ([",
                     e.start, ", +", e.capacity, "))"));
  }
  if (getpid() != holder_) {
    return absl::FailedPreconditionError(
        absl::StrCat("the tensor arena was mapped by process ", holder_,
                     ", not this forked child"));
  }
  absl::MutexLock lock(&mu_);
  if (holds_[block]++ == 0) {
    e.reader_mask.fetch_or(uint64_t{1} << slot_, std::memory_order_acq_rel);
  }
  return data_region_ + offset;
}

void AttachedArena::Release(uint32_t block) {
  if (getpid() != holder_) return;
  absl::MutexLock lock(&mu_);
  auto it = holds_.find(block);
  if (it == holds_.end() || --it->second > 0) return;
  holds_.erase(it);
  entry(block).reader_mask.fetch_and(~(uint64_t{1} << slot_),
                                     std::memory_order_release);
}

bool AttachedArena::OwnerGone() const {
  pollfd p{pidfd_, POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

}  // namespace distflow
