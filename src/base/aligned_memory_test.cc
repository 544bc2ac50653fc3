#include "base/aligned_memory.h"

#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace distflow {
namespace {

// Whether the kernel lets a process ask for transparent huge pages.
bool HugePagesOffered() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  return std::getline(f, mode) && mode.find("[never]") == std::string::npos;
}

// The "THPeligible" line of the mapping of this process that holds `p`:
// 1 when the kernel may back it with huge pages.
int HugePageEligible(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream header(line);
    if (header >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= address && address < end;
    } else if (inside && line.rfind("THPeligible:", 0) == 0) {
      return std::stoi(line.substr(12));
    }
  }
  return -1;
}

TEST(AlignedMemoryTest, SmallBuffersHaveTheAskedAlignment) {
  for (size_t size : {size_t{1}, size_t{100}, size_t{64} << 10}) {
    void* p = AllocateAligned(size, 64);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << size;
    std::memset(p, 1, size);
    FreeAligned(p, size);
  }
}

TEST(AlignedMemoryTest, LargeBuffersStartOnAHugePage) {
  for (size_t size :
       {kMinHugePageBufferBytes, size_t{2} << 20, (size_t{5} << 20) + 12345}) {
    void* p = AllocateAligned(size, 64);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePageBytes, 0u) << size;
    std::memset(p, 1, size);  // all of it is ours
    FreeAligned(p, size);
  }
}

TEST(AlignedMemoryTest, LargeBuffersMayUseHugePages) {
  if (!HugePagesOffered()) GTEST_SKIP() << "transparent huge pages are off";
  // A 1 MiB buffer takes a whole huge page; a 4.5 MiB one two, and its last
  // half MiB stays on normal pages.
  for (size_t size : {size_t{1} << 20, (size_t{9} << 20) / 2}) {
    void* p = AllocateAligned(size, 64);
    ASSERT_NE(p, nullptr);
    std::memset(p, 1, size);
    EXPECT_EQ(HugePageEligible(p), 1) << size;
    EXPECT_EQ(HugePageEligible(static_cast<char*>(p) + size - 1),
              size < kHugePageBytes ? 1 : 0)
        << size;
    FreeAligned(p, size);
  }
}

// Page faults this process has taken.
long MinorFaults() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// A large buffer freed and allocated again comes back already backed by
// memory: a tensor allocated every step must not be faulted in (and cleared)
// every step.
TEST(AlignedMemoryTest, LargeBufferAllocatedAgainIsNotFaultedInAgain) {
#if defined(__SANITIZE_ADDRESS__) || defined(__has_feature)
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer replaces the allocator this measures";
#endif
#endif
  constexpr size_t kSizes[] = {(size_t{4} << 20) + 64, size_t{4} << 20};
  for (int i = 0; i < 3; ++i) {  // warm up
    for (size_t size : kSizes) {
      void* p = AllocateAligned(size, 64);
      std::memset(p, 1, size);
      FreeAligned(p, size);
    }
  }
  const long before = MinorFaults();
  for (int i = 0; i < 50; ++i) {
    for (size_t size : kSizes) {
      void* p = AllocateAligned(size, 64);
      ASSERT_NE(p, nullptr);
      std::memset(p, 1, size);
      FreeAligned(p, size);
    }
  }
  // Faulting each buffer in anew would cost 2 faults per buffer on huge
  // pages, 1024 on 4 KiB pages.
  EXPECT_LT(MinorFaults() - before, 20);
}

}  // namespace
}  // namespace distflow
