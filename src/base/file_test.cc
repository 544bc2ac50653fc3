#include "base/file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

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

int ModeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return static_cast<int>(st.st_mode & 0777);
}

// Records every call the fault hook sees; fails those `fail` picks.
class FaultRecorder {
 public:
  explicit FaultRecorder(
      std::function<int(absl::string_view, const std::string&)> fail = nullptr)
      : fail_(std::move(fail)) {
    SetFileFaultHookForTesting(
        [this](absl::string_view call, const std::string& path) {
          std::lock_guard<std::mutex> lock(mu_);
          calls_.emplace_back(std::string(call), path);
          return fail_ ? fail_(call, path) : 0;
        });
  }
  ~FaultRecorder() { SetFileFaultHookForTesting(nullptr); }
  std::vector<std::pair<std::string, std::string>> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  std::function<int(absl::string_view, const std::string&)> fail_;
  std::mutex mu_;
  std::vector<std::pair<std::string, std::string>> calls_;
};

TEST(FileTest, CommitFlushesTheFileThenRenamesThenFlushesTheDirectory) {
  const std::string dir = TestDir();
  const std::string path = dir + "/data";
  FaultRecorder recorder;
  auto writer = AtomicFileWriter::Create(path);
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::string temp = (*writer)->temp_path();
  ASSERT_TRUE((*writer)->Append("bytes").ok());
  ASSERT_TRUE((*writer)->Commit().ok());
  using Call = std::pair<std::string, std::string>;
  EXPECT_THAT(recorder.calls(),
              ::testing::ElementsAre(Call("create", temp), Call("write", temp),
                                     Call("fsync", temp), Call("rename", path),
                                     Call("fsync_dir", dir)));
}

TEST(FileTest, NewFilesAreOwnerOnlyUnlessAModeIsGiven) {
  const std::string dir = TestDir();
  ASSERT_TRUE(WriteFileAtomically(dir + "/private", "x").ok());
  EXPECT_EQ(ModeOf(dir + "/private"), 0600);
  ASSERT_TRUE(WriteFileAtomically(dir + "/shared", "x", 0640).ok());
  EXPECT_EQ(ModeOf(dir + "/shared"), 0640);
}

TEST(FileTest, FullDiskFailsTheWriteNamingTheFileAndLeavesNothing) {
  const std::string dir = TestDir();
  const std::string path = dir + "/data";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  for (const char* call : {"write", "fsync", "rename", "create"}) {
    FaultRecorder recorder([&](absl::string_view c, const std::string&) {
      return c == call ? ENOSPC : 0;
    });
    absl::Status s = WriteFileAtomically(path, "new");
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << call;
    EXPECT_THAT(s.message(), HasSubstr(path)) << call;
    EXPECT_THAT(s.message(), HasSubstr("No space left")) << call;
    EXPECT_EQ(*ReadFileToString(path), "old") << call;
    EXPECT_EQ(CountEntries(dir), 1) << call;  // no temporary file left
  }
}

TEST(FileTest, FailedDirectoryFlushIsAnErrorNamingTheDirectory) {
  const std::string dir = TestDir();
  FaultRecorder recorder([](absl::string_view call, const std::string&) {
    return call == "fsync_dir" ? EIO : 0;
  });
  absl::Status s = WriteFileAtomically(dir + "/data", "x");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("'" + dir + "'"));
}

TEST(FileTest, LockIsExclusiveUntilReleased) {
  const std::string path = TestDir() + "/lock";
  auto first = FileLock::Acquire(path);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(ModeOf(path), 0640);
  // A second open file description conflicts under flock even in one
  // process, as another process's would.
  auto second = FileLock::Acquire(path, absl::Milliseconds(50));
  EXPECT_EQ(second.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(second.status().message(), HasSubstr(path));
  first->reset();
  second = FileLock::Acquire(path, absl::Milliseconds(50));
  EXPECT_TRUE(second.ok()) << second.status();
}

TEST(FileTest, LockInAMissingDirectoryNamesTheFile) {
  const std::string path = TestDir() + "/absent/lock";
  auto lock = FileLock::Acquire(path);
  EXPECT_EQ(lock.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(lock.status().message(), HasSubstr(path));
}

}  // namespace
}  // namespace distflow
