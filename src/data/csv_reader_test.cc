#include <string>

#include "data/data_test_util.h"
#include "distflow/data.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace data {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class CsvReaderTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& content,
                    const std::string& name = "data.csv") {
    const std::string path = dir_ + "/" + name;
    test::WriteRawFile(path, content);
    return path;
  }
  std::string dir_ = test::MakeTempDir();
};

TEST_F(CsvReaderTest, ReadsTypedColumnsWithHeader) {
  const std::string path = Write(
      "x, \"count\" ,big,y\r\n"
      "1.5,3,9000000000,0.25\r\n"
      "\r\n"
      " -2 , -7 ,-1, 1e-3\r\n");
  CsvOptions options;
  options.has_header = true;
  options.column_types = {DataType::kFloat, DataType::kInt32, DataType::kInt64,
                          DataType::kDouble};
  absl::StatusOr<CsvTable> table = ReadCsv(path, options);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->column_names, ElementsAre("x", "count", "big", "y"));
  EXPECT_EQ(table->num_rows, 2);
  ASSERT_EQ(table->columns.size(), 4u);
  EXPECT_TRUE(table->columns[0].Equals(Tensor::Vector<float>({1.5f, -2.0f})));
  EXPECT_TRUE(table->columns[1].Equals(Tensor::Vector<int32_t>({3, -7})));
  EXPECT_TRUE(
      table->columns[2].Equals(Tensor::Vector<int64_t>({9000000000LL, -1})));
  EXPECT_TRUE(table->columns[3].Equals(Tensor::Vector<double>({0.25, 1e-3})));
}

TEST_F(CsvReaderTest, DefaultsToFloatColumnsAndOtherDelimiters) {
  const std::string path = Write("1\t2\t3\n4\t5\t6");  // no final newline
  CsvOptions options;
  options.delimiter = '\t';
  absl::StatusOr<CsvTable> table = ReadCsv(path, options);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->num_rows, 2);
  EXPECT_THAT(table->column_names, ElementsAre("", "", ""));
  EXPECT_TRUE(table->columns[2].Equals(Tensor::Vector<float>({3, 6})));
}

TEST_F(CsvReaderTest, ReadsGzipFilesAndFeedsADataset) {
  const std::string path = dir_ + "/data.csv.gz";
  test::WriteGzipFile(path, "a;b\n1;10\n2;20\n3;30\n");
  CsvOptions options;
  options.delimiter = ';';
  options.has_header = true;
  options.column_types = {DataType::kFloat, DataType::kInt32};
  absl::StatusOr<CsvTable> table = ReadCsv(path, options);
  ASSERT_TRUE(table.ok()) << table.status();
  auto it = Dataset::FromTensors(table->columns).Batch(2).MakeIterator();
  ASSERT_TRUE(it.ok()) << it.status();
  auto batch = (*it)->GetNext();
  ASSERT_TRUE(batch.ok() && batch->has_value());
  EXPECT_TRUE((**batch)[1].Equals(Tensor::Vector<int32_t>({10, 20})));
}

TEST_F(CsvReaderTest, BadValueNamesFileLineColumnAndText) {
  const std::string path = Write("a,b\n1,2\n3,x7\n");
  CsvOptions options;
  options.has_header = true;
  absl::StatusOr<CsvTable> table = ReadCsv(path, options);
  EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(table.status().message(),
              HasSubstr(path + ":3:2: expected a float32 value, found \"x7\""));
}

TEST_F(CsvReaderTest, IntColumnsRejectFractionsAndOverflow) {
  CsvOptions options;
  options.column_types = {DataType::kInt32};
  EXPECT_THAT(ReadCsv(Write("1\n1.5\n"), options).status().message(),
              HasSubstr(":2:1: expected an int32 value, found \"1.5\""));
  EXPECT_THAT(ReadCsv(Write("3000000000\n"), options).status().message(),
              HasSubstr(":1:1: expected an int32 value, found \"3000000000\""));
}

TEST_F(CsvReaderTest, EmptyFieldAndWrongFieldCount) {
  const std::string path = Write("1,2,3\n4,,6\n");
  EXPECT_THAT(
      ReadCsv(path).status().message(),
      HasSubstr(path + ":2:2: expected a float32 value, found an empty field"));
  const std::string ragged = Write("1,2,3\n\n4,5\n", "ragged.csv");
  EXPECT_THAT(
      ReadCsv(ragged).status().message(),
      HasSubstr(ragged + ":3: expected 3 fields separated by ',', found 2"));
}

TEST_F(CsvReaderTest, ColumnTypesMustMatchTheFile) {
  CsvOptions options;
  options.has_header = true;
  options.column_types = {DataType::kFloat, DataType::kFloat};
  const std::string path = Write("a,b,c\n1,2,3\n");
  EXPECT_THAT(ReadCsv(path, options).status().message(),
              HasSubstr(path + ":1: expected 2 fields"));
  options.column_types = {DataType::kString};
  EXPECT_THAT(ReadCsv(path, options).status().message(),
              HasSubstr("column_types[0] is string; expected float32"));
}

TEST(StackColumnsTest, PutsColumnsSideBySide) {
  absl::StatusOr<Tensor> m = StackColumns(
      {Tensor::Vector<float>({1, 2, 3}), Tensor::Vector<float>({4, 5, 6})});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->Equals(Tensor::Matrix<float>({{1, 4}, {2, 5}, {3, 6}})));
  EXPECT_THAT(StackColumns({Tensor::Vector<float>({1, 2}),
                            Tensor::Vector<int32_t>({1, 2})})
                  .status()
                  .message(),
              HasSubstr("column 1 is int32[2] and column 0 float32[2]"));
  EXPECT_FALSE(
      StackColumns({Tensor::Vector<float>({1, 2}), Tensor::Vector<float>({1})})
          .ok());
  EXPECT_FALSE(StackColumns({}).ok());
}

TEST_F(CsvReaderTest, MissingFileIsNotFound) {
  const std::string path = dir_ + "/nope.csv";
  absl::StatusOr<CsvTable> table = ReadCsv(path);
  EXPECT_EQ(table.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(table.status().message(), HasSubstr(path));
}

TEST_F(CsvReaderTest, HeaderOnlyFileHasNoRows) {
  CsvOptions options;
  options.has_header = true;
  options.column_types = {DataType::kInt64, DataType::kFloat};
  absl::StatusOr<CsvTable> table = ReadCsv(Write("a,b\n"), options);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->num_rows, 0);
  EXPECT_EQ(table->columns[0].shape(), TensorShape({0}));
  EXPECT_EQ(table->columns[0].dtype(), DataType::kInt64);
}

}  // namespace
}  // namespace data
}  // namespace distflow
