// Files: whole-file reads, positioned reads, writes that appear all at once (a
// temporary name, then a rename) so a reader never sees a partial file, and
// locks that serialize processes updating one file.
#ifndef DISTFLOW_BASE_FILE_H_
#define DISTFLOW_BASE_FILE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace distflow {

// The contents of `path`; NOT_FOUND if it does not exist, another error naming
// the file and the system's reason otherwise.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// A file opened for reads at any offset. Thread-compatible: concurrent ReadAt
// calls are safe (pread), nothing else changes it.
class RandomAccessFile {
 public:
  // NOT_FOUND if `path` does not exist.
  static absl::StatusOr<std::unique_ptr<RandomAccessFile>> Open(
      const std::string& path);
  ~RandomAccessFile();
  RandomAccessFile(const RandomAccessFile&) = delete;
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;

  const std::string& path() const { return path_; }
  // The size when the file was opened.
  uint64_t size() const { return size_; }
  // Reads exactly `n` bytes at `offset` into `dst`; DATA_LOSS naming the file
  // if it ends first.
  absl::Status ReadAt(uint64_t offset, size_t n, void* dst) const;

 private:
  RandomAccessFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  std::string path_;
  int fd_;
  uint64_t size_;
};

// The mode of files AtomicFileWriter creates unless told otherwise: only the
// owner may read them, as tensors and models may be private.
inline constexpr int kPrivateFileMode = 0600;

// Writes a file under "<path>.tmp-<random hex>" in the same directory and, on
// Commit, makes it durable in this order: the data is flushed to disk
// (fsync), the file renamed to `path` (replacing any file there), and the
// directory flushed so that the rename survives a crash. Readers see the old
// file or the whole new one, never a part. A writer destroyed before Commit
// (or whose Commit failed before the rename) removes its temporary file.
class AtomicFileWriter {
 public:
  // `mode` is the new file's permissions (less the process's umask).
  static absl::StatusOr<std::unique_ptr<AtomicFileWriter>> Create(
      const std::string& path, int mode = kPrivateFileMode);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  absl::Status Append(absl::string_view data);
  absl::Status Commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  AtomicFileWriter(std::string path, std::string temp_path, int fd)
      : path_(std::move(path)), temp_path_(std::move(temp_path)), fd_(fd) {}
  std::string path_;
  std::string temp_path_;
  int fd_;  // -1 once closed
  bool committed_ = false;
};

// Writes `contents` to `path` through an AtomicFileWriter.
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view contents,
                                 int mode = kPrivateFileMode);

// Flushes the directory `dir` to disk (fsync), so that files created, renamed
// or removed in it stay so after a crash.
absl::Status SyncDirectory(const std::string& dir);

// An exclusive advisory lock (flock) on the file `path`, created with mode
// 0640 if missing, held until the object is destroyed. It serializes
// processes that take the same lock on one host, and across hosts where the
// file system supports flock (NFSv4, Lustre mounted with flock). The file
// itself is left in place: removing it would let two processes lock two
// different files of one name.
class FileLock {
 public:
  // Waits up to `timeout` for the lock; DEADLINE_EXCEEDED naming the lock
  // file if another process holds it that long, another error naming it if
  // it cannot be created or locked.
  static absl::StatusOr<std::unique_ptr<FileLock>> Acquire(
      const std::string& path, absl::Duration timeout = absl::Seconds(60));
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

// For tests only: a function called before each system call that writes
// through this file's functions, with the call's name ("create" the
// temporary file, "write", "fsync" the file, "rename" (given the destination),
// "fsync_dir", "lock") and the path. A non-zero return is taken for the
// call's errno: the call is not made and fails with that error. Returns 0 to
// let the call go ahead. May be called from any thread; nullptr removes it.
using FileFaultHook =
    std::function<int(absl::string_view call, const std::string& path)>;
void SetFileFaultHookForTesting(FileFaultHook hook);

}  // namespace distflow

#endif  // DISTFLOW_BASE_FILE_H_
