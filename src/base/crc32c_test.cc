#include "base/crc32c.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace distflow {
namespace {

// A bit-at-a-time reference straight from the definition, independent of the
// table or instruction the library uses.
uint32_t BitwiseCrc32c(const std::string& s) {
  uint32_t crc = 0xFFFFFFFF;
  for (unsigned char c : s) {
    crc ^= c;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc >> 1) ^ ((crc & 1) ? 0x82F63B78 : 0);
    }
  }
  return ~crc;
}

TEST(Crc32cTest, StandardCheckValue) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(internal::Crc32cExtendPortable(0, "123456789", 9), 0xE3069283u);
}

TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(Crc32c("", 0), 0u);
  // RFC 3720 (iSCSI), appendix B.4: 32 bytes of zeros and of 0xFF.
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xFF);
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(ones.data(), ones.size()), 0x62A8AB43u);
}

TEST(Crc32cTest, MatchesBitwiseReferenceAtEveryLengthAndAlignment) {
  std::string data;
  for (int i = 0; i < 300; ++i) data.push_back(static_cast<char>(i * 37 + 11));
  for (size_t start = 0; start < 9; ++start) {
    for (size_t n = 0; start + n <= data.size(); n += 7) {
      const std::string piece = data.substr(start, n);
      ASSERT_EQ(Crc32c(piece.data(), n), BitwiseCrc32c(piece))
          << "start " << start << " length " << n;
      ASSERT_EQ(internal::Crc32cExtendPortable(0, piece.data(), n),
                BitwiseCrc32c(piece))
          << "tables only, start " << start << " length " << n;
    }
  }
}

TEST(Crc32cTest, ExtendEqualsOneShot) {
  const std::string a = "distributed ", b = "training checkpoints";
  const std::string ab = a + b;
  EXPECT_EQ(Crc32cExtend(Crc32c(a.data(), a.size()), b.data(), b.size()),
            Crc32c(ab.data(), ab.size()));
  EXPECT_EQ(Crc32cExtend(0, ab.data(), ab.size()),
            Crc32c(ab.data(), ab.size()));
}

}  // namespace
}  // namespace distflow
