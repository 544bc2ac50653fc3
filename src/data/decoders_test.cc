// The in-memory decoders behind ReadIdxFile and ReadCsv (what the fuzz
// targets call): the same answers and errors as the file readers.
#include "data/decoders.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace data {
namespace internal {
namespace {

using ::testing::HasSubstr;

std::string Idx(const std::string& dims_be, const std::string& payload,
                char rank) {
  return std::string({0, 0, 0x08, rank}) + dims_be + payload;
}

TEST(DecodeIdxTest, ReadsShapeAndBytes) {
  auto t = DecodeIdx(Idx(std::string("\0\0\0\2\0\0\0\3", 8), "abcdef", 2),
                     "mem.idx");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->shape(), TensorShape({2, 3}));
  EXPECT_EQ(std::string(static_cast<const char*>(t->raw_data()), 6), "abcdef");
}

TEST(DecodeIdxTest, ClaimsBeyondTheDataAreDataLossNamingTheFile) {
  // 2^32-1 cubed overflows int64; 2^32-1 squared does not but is far beyond
  // the 0 bytes of data.
  for (const std::string& dims :
       {std::string(12, '\xff'), std::string(8, '\xff')}) {
    auto t =
        DecodeIdx(Idx(dims, "", static_cast<char>(dims.size() / 4)), "mem.idx");
    EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(t.status().message(), HasSubstr("mem.idx"));
  }
  auto t = DecodeIdx(std::string("\0\0", 2), "mem.idx");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
}

TEST(ParseCsvTest, ParsesAndNamesTheLineOfABadValue) {
  CsvOptions options;
  options.has_header = true;
  auto table = ParseCsv("a,b\n1,2\n3,4\n", "mem.csv", options);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->num_rows, 2);
  EXPECT_EQ(table->column_names[1], "b");
  auto bad = ParseCsv("1,2\n3,x\n", "mem.csv", CsvOptions());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("mem.csv:2:2"));
}

}  // namespace
}  // namespace internal
}  // namespace data
}  // namespace distflow
