#include "base/file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

// A fresh empty directory for one test.
std::string TestDir() {
  std::string dir = ::testing::TempDir() + "distflow_file_test_XXXXXX";
  EXPECT_NE(mkdtemp(dir.data()), nullptr);
  return dir;
}

int CountEntries(const std::string& dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++n;
  }
  return n;
}

TEST(FileTest, MissingFileIsNotFoundNamingIt) {
  const std::string path = TestDir() + "/absent";
  auto got = ReadFileToString(path);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(got.status().message(), HasSubstr(path));
}

TEST(FileTest, AtomicWriterShowsNothingUntilCommit) {
  const std::string dir = TestDir();
  const std::string path = dir + "/data";
  auto writer = AtomicFileWriter::Create(path);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Append("hello ").ok());
  ASSERT_TRUE((*writer)->Append("world").ok());
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_THAT((*writer)->temp_path(), HasSubstr(path + ".tmp-"));
  EXPECT_TRUE(std::filesystem::exists((*writer)->temp_path()));
  ASSERT_TRUE((*writer)->Commit().ok());
  EXPECT_EQ(*ReadFileToString(path), "hello world");
  writer->reset();
  EXPECT_EQ(CountEntries(dir), 1);  // no temporary file left behind
}

TEST(FileTest, AbandonedWriterRemovesItsTemporaryFile) {
  const std::string dir = TestDir();
  {
    auto writer = AtomicFileWriter::Create(dir + "/data");
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Append("partial").ok());
  }
  EXPECT_EQ(CountEntries(dir), 0);
}

TEST(FileTest, WriteFileAtomicallyReplacesTheOldFile) {
  const std::string path = TestDir() + "/data";
  ASSERT_TRUE(WriteFileAtomically(path, "old contents").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "new").ok());
  EXPECT_EQ(*ReadFileToString(path), "new");
}

TEST(FileTest, WriteIntoMissingDirectoryNamesThePath) {
  const std::string path = TestDir() + "/no/such/dir/data";
  absl::Status s = WriteFileAtomically(path, "x");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("/no/such/dir/data.tmp-"));
}

TEST(FileTest, ReadPastTheEndIsDataLossNamingTheFile) {
  const std::string path = TestDir() + "/data";
  ASSERT_TRUE(WriteFileAtomically(path, "0123456789").ok());
  auto file = RandomAccessFile::Open(path);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->size(), 10u);
  char buf[8];
  ASSERT_TRUE((*file)->ReadAt(2, 8, buf).ok());
  EXPECT_EQ(std::string(buf, 8), "23456789");
  absl::Status s = (*file)->ReadAt(6, 8, buf);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("truncated"));
}

}  // namespace
}  // namespace distflow
