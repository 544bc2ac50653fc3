#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "base/crc32c.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "train/record_format.h"
#include "train/record_reader.h"
#include "train/record_writer.h"

namespace distflow {
namespace train {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  const std::string path = ::testing::TempDir() + name;
  std::remove(path.c_str());
  return path;
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

void SetFileBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(RecordFormatTest, MaskIsReversibleAndNotIdentity) {
  for (uint32_t crc : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu}) {
    EXPECT_EQ(UnmaskCrc(MaskCrc(crc)), crc);
    EXPECT_NE(MaskCrc(crc), crc);
  }
  // Rotated right by 15, plus 0xa282ead8: 1 -> 1 << 17, plus the delta.
  EXPECT_EQ(MaskCrc(1), (1u << 17) + 0xa282ead8u);
}

TEST(RecordIoTest, WritesFramingAndReadsBack) {
  const std::string path = TempPath("records_roundtrip");
  const std::string big(3 << 20, 'x');  // above the 1 MiB pending limit
  {
    auto writer = RecordWriter::Create(path);
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE((*writer)->Write("hello").ok());
    ASSERT_TRUE((*writer)->Write("").ok());
    ASSERT_TRUE((*writer)->Write(big).ok());
    ASSERT_TRUE((*writer)->Flush().ok());
  }
  const std::string bytes = FileBytes(path);
  // The first record, byte by byte: length 5, its masked CRC, data, CRC.
  ASSERT_GE(bytes.size(), 21u);
  EXPECT_EQ(DecodeFixed64(bytes.data()), 5u);
  EXPECT_EQ(DecodeFixed32(bytes.data() + 8), MaskCrc(Crc32c(bytes.data(), 8)));
  EXPECT_EQ(bytes.substr(12, 5), "hello");
  EXPECT_EQ(DecodeFixed32(bytes.data() + 17), MaskCrc(Crc32c("hello", 5)));
  EXPECT_EQ(bytes.size(), 3 * 16 + 5 + big.size());

  auto records = ReadRecords(path);
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 3u);
  EXPECT_EQ((*records)[0], "hello");
  EXPECT_EQ((*records)[1], "");
  EXPECT_EQ((*records)[2], big);
  // Event files: the owner and the group (TensorBoard) may read them.
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST(RecordIoTest, RecordsReachTheFileOnFlushOnly) {
  const std::string path = TempPath("records_flush");
  auto writer = RecordWriter::Create(path);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Write("one").ok());
  EXPECT_EQ(FileBytes(path).size(), 0u);
  ASSERT_TRUE((*writer)->Flush().ok());
  EXPECT_EQ(FileBytes(path).size(), 19u);
}

TEST(RecordIoTest, NeverOverwritesAFile) {
  const std::string path = TempPath("records_exists");
  SetFileBytes(path, "precious");
  auto writer = RecordWriter::Create(path);
  EXPECT_TRUE(absl::IsAlreadyExists(writer.status())) << writer.status();
  EXPECT_THAT(writer.status().message(), HasSubstr(path));
  EXPECT_EQ(FileBytes(path), "precious");
}

TEST(RecordIoTest, ReaderDetectsEveryKindOfDamage) {
  const std::string path = TempPath("records_damage");
  {
    auto writer = RecordWriter::Create(path);
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE((*writer)->Write("first record").ok());
    ASSERT_TRUE((*writer)->Write("second record").ok());
  }
  const std::string good = FileBytes(path);
  const size_t second = 16 + 12;  // where the second record starts
  struct Case {
    const char* name;
    std::string bytes;
    const char* error;
  };
  std::string length_flip = good, data_flip = good, crc_flip = good;
  length_flip[second] ^= 0x01;
  data_flip[second + 12 + 3] ^= 0x20;
  crc_flip[good.size() - 1] ^= 0x80;
  const std::vector<Case> cases = {
      {"length", length_flip, "record 1 at byte 28: length CRC mismatch"},
      {"data", data_flip, "record 1 at byte 28: data CRC mismatch"},
      {"data crc", crc_flip, "record 1 at byte 28: data CRC mismatch"},
      {"cut in data", good.substr(0, good.size() - 6), "cut short"},
      {"cut in header", good.substr(0, second + 5), "header cut short"},
  };
  for (const Case& c : cases) {
    SetFileBytes(path, c.bytes);
    auto records = ReadRecords(path);
    EXPECT_TRUE(absl::IsDataLoss(records.status())) << c.name;
    EXPECT_THAT(records.status().message(), HasSubstr(c.error)) << c.name;
    EXPECT_THAT(records.status().message(), HasSubstr(path)) << c.name;
  }
}

TEST(RecordIoTest, MissingFileIsNotFoundNamingIt) {
  const std::string path = TempPath("records_missing");
  auto records = ReadRecords(path);
  EXPECT_TRUE(absl::IsNotFound(records.status())) << records.status();
  EXPECT_THAT(records.status().message(), HasSubstr(path));
}

}  // namespace
}  // namespace train
}  // namespace distflow
