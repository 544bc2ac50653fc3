#include "base/crc32c.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace distflow {
namespace {

TEST(Crc32cTest, CheckValue) {
  // The standard check value of CRC-32C.
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c_internal::ExtendPortable(0, "123456789", 9), 0xE3069283u);
}

TEST(Crc32cTest, KnownVectors) {
  // Test vectors of RFC 3720 (iSCSI), appendix B.4.
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xff), ascending(32);
  for (int i = 0; i < 32; ++i) ascending[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(ascending.data(), ascending.size()), 0x46DD794Eu);
  EXPECT_EQ(Crc32c("", 0), 0u);
}

TEST(Crc32cTest, ExtendEqualsWholeAndBothPathsAgree) {
  std::mt19937 gen(7);
  std::string data(1000, '\0');
  for (char& c : data) c = static_cast<char>(gen());
  const uint32_t whole = Crc32c(data.data(), data.size());
  EXPECT_EQ(crc32c_internal::ExtendPortable(0, data.data(), data.size()),
            whole);
  for (size_t cut :
       {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{513}, data.size()}) {
    const uint32_t head = Crc32c(data.data(), cut);
    EXPECT_EQ(Crc32cExtend(head, data.data() + cut, data.size() - cut), whole)
        << "split at " << cut;
  }
}

TEST(Crc32cTest, DetectsOneFlippedBit) {
  std::string data = "a record of some length";
  const uint32_t before = Crc32c(data.data(), data.size());
  data[5] ^= 0x10;
  EXPECT_NE(Crc32c(data.data(), data.size()), before);
}

}  // namespace
}  // namespace distflow
