#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "data/data_test_util.h"
#include "distflow/data.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace data {
namespace {

using test::IdxFile;
using test::IdxHeader;
using test::MakeTempDir;
using test::WriteGzipFile;
using test::WriteRawFile;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::vector<uint8_t> Pattern(size_t n) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 3);
  return bytes;
}

class IdxReaderTest : public ::testing::TestWithParam<bool> {
 protected:
  // Writes `bytes` gzip'd or raw, as the test parameter says.
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name + (GetParam() ? ".gz" : "");
    if (GetParam()) {
      WriteGzipFile(path, bytes);
    } else {
      WriteRawFile(path, bytes);
    }
    return path;
  }
  std::string dir_ = MakeTempDir();
};

TEST_P(IdxReaderTest, ReadsShapeAndBytes) {
  const std::vector<uint8_t> payload = Pattern(3 * 2 * 4);
  const std::string path = Write("cube", IdxFile({3, 2, 4}, payload));
  absl::StatusOr<Tensor> t = ReadIdxFile(path);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DataType::kUInt8);
  EXPECT_EQ(t->shape(), TensorShape({3, 2, 4}));
  EXPECT_EQ(std::vector<uint8_t>(t->flat<uint8_t>().begin(),
                                 t->flat<uint8_t>().end()),
            payload);
}

TEST_P(IdxReaderTest, ReadsVectorsAndEmptyTensors) {
  absl::StatusOr<Tensor> v = ReadIdxFile(Write("v", IdxFile({5}, Pattern(5))));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->shape(), TensorShape({5}));
  EXPECT_EQ(v->flat<uint8_t>()[4], Pattern(5)[4]);
  absl::StatusOr<Tensor> empty = ReadIdxFile(Write("e", IdxFile({0, 28}, {})));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), TensorShape({0, 28}));
}

TEST_P(IdxReaderTest, TruncatedPayloadNamesFileAndCounts) {
  std::vector<uint8_t> payload = Pattern(20);
  const std::string path = Write("short", IdxFile({2, 3, 4}, payload));
  absl::StatusOr<Tensor> t = ReadIdxFile(path);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(t.status().message(),
              AllOf(HasSubstr(path), HasSubstr("expected 24 bytes of data"),
                    HasSubstr("16-byte header"), HasSubstr("found 20")));
}

TEST_P(IdxReaderTest, TrailingDataIsAnError) {
  const std::string path = Write("long", IdxFile({2, 2}, Pattern(7)));
  absl::StatusOr<Tensor> t = ReadIdxFile(path);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(t.status().message(),
              AllOf(HasSubstr(path), HasSubstr("expected 4 bytes"),
                    HasSubstr("found 7"), HasSubstr("3 bytes of trailing")));
}

TEST_P(IdxReaderTest, BadMagicNamesFile) {
  std::string bytes = IdxFile({4}, Pattern(4));
  bytes[0] = 0x1f;
  const std::string path = Write("magic", bytes);
  absl::StatusOr<Tensor> t = ReadIdxFile(path);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(t.status().message(),
              AllOf(HasSubstr(path), HasSubstr("bad magic number 1f000801")));
}

TEST_P(IdxReaderTest, UnsupportedTypeNamesTypeAndExpectation) {
  const std::string path =
      Write("floats", IdxHeader({1}, 0x0D) + std::string(4, '\0'));
  absl::StatusOr<Tensor> t = ReadIdxFile(path);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(t.status().message(),
              AllOf(HasSubstr(path), HasSubstr("0x0d (float32)"),
                    HasSubstr("expected 0x08 (unsigned byte)")));
}

TEST_P(IdxReaderTest, HeaderCutInsideTheDimensions) {
  // Rank 3 promises 12 bytes of sizes; only two sizes follow.
  std::string bytes = IdxHeader({10, 28, 28}).substr(0, 4 + 8);
  const std::string path = Write("cut", bytes);
  absl::StatusOr<Tensor> t = ReadIdxFile(path);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(
      t.status().message(),
      AllOf(HasSubstr(path), HasSubstr("rank 3"),
            HasSubstr("expected 12 bytes of dimension sizes, found 8")));
}

TEST_P(IdxReaderTest, RankZeroAndEmptyFile) {
  const std::string rank0 = Write("rank0", IdxHeader({}));
  EXPECT_THAT(ReadIdxFile(rank0).status().message(),
              AllOf(HasSubstr(rank0), HasSubstr("rank 0")));
  const std::string empty = Write("empty", "");
  EXPECT_THAT(ReadIdxFile(empty).status().message(),
              AllOf(HasSubstr(empty), HasSubstr("4-byte IDX magic number"),
                    HasSubstr("found 0 bytes")));
}

TEST_P(IdxReaderTest, HugeClaimedSizeFailsWithoutAllocating) {
  // 60000 x 60000 x 60000 bytes would not fit in memory; the reader must
  // notice that the file cannot hold it and count what is there instead.
  const std::string path =
      Write("huge", IdxHeader({60000, 60000, 60000}) + std::string(100, 'x'));
  absl::StatusOr<Tensor> t = ReadIdxFile(path);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(t.status().message(),
              AllOf(HasSubstr(path), HasSubstr("expected 216000000000000"),
                    HasSubstr("found 100")));
}

INSTANTIATE_TEST_SUITE_P(RawAndGzip, IdxReaderTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Gzip" : "Raw";
                         });

TEST(IdxReaderFileTest, MissingFileIsNotFound) {
  const std::string path = MakeTempDir() + "/t10k-images-idx3-ubyte.gz";
  absl::StatusOr<Tensor> t = ReadIdxFile(path);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(t.status().message(), HasSubstr(path));
}

TEST(IdxReaderFileTest, DirectoryIsAnError) {
  const std::string dir = MakeTempDir();
  absl::StatusOr<Tensor> t = ReadIdxFile(dir);
  EXPECT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(),
              AllOf(HasSubstr(dir), HasSubstr("is a directory")));
}

// Writes a gzip file of an IDX payload large enough to span several deflate
// blocks, and returns its compressed bytes.
std::string CompressedIdx(const std::string& dir,
                          std::vector<uint8_t>* payload) {
  *payload = std::vector<uint8_t>(200000);
  uint32_t state = 12345;
  for (uint8_t& b : *payload) {
    state = state * 1103515245u + 12345u;
    b = static_cast<uint8_t>(state >> 24);
  }
  const std::string path = dir + "/full.gz";
  WriteGzipFile(path, IdxFile({200000}, *payload));
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(IdxReaderFileTest, CutGzipStreamIsAnError) {
  const std::string dir = MakeTempDir();
  std::vector<uint8_t> payload;
  const std::string gz = CompressedIdx(dir, &payload);
  ASSERT_TRUE(ReadIdxFile(dir + "/full.gz").ok());

  const std::string cut = dir + "/cut.gz";
  WriteRawFile(cut, gz.substr(0, gz.size() / 2));
  absl::StatusOr<Tensor> t = ReadIdxFile(cut);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(t.status().message(),
              AllOf(HasSubstr(cut), HasSubstr("expected 200000 bytes"),
                    HasSubstr("gzip stream ends early")));

  // Only the 8-byte trailer (CRC and length) missing: every payload byte is
  // there, but the file is still damaged.
  const std::string no_trailer = dir + "/no_trailer.gz";
  WriteRawFile(no_trailer, gz.substr(0, gz.size() - 8));
  t = ReadIdxFile(no_trailer);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(t.status().message(),
              AllOf(HasSubstr(no_trailer), HasSubstr("ends early")));
}

TEST(IdxReaderFileTest, CorruptGzipDataIsAnError) {
  const std::string dir = MakeTempDir();
  std::vector<uint8_t> payload;
  std::string gz = CompressedIdx(dir, &payload);
  // Damage the stored CRC: the data inflate but fail the check.
  gz[gz.size() - 8] ^= 0x5a;
  const std::string path = dir + "/bad_crc.gz";
  WriteRawFile(path, gz);
  absl::StatusOr<Tensor> t = ReadIdxFile(path);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(t.status().message(), HasSubstr(path));
}

}  // namespace
}  // namespace data
}  // namespace distflow
