// Files: whole-file reads, positioned reads, and writes that appear all at once
// (a temporary name, then a rename) so a reader never sees a partial file.
#ifndef DISTFLOW_BASE_FILE_H_
#define DISTFLOW_BASE_FILE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

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

// Writes a file under "<path>.tmp-<random hex>" in the same directory and, on
// Commit, flushes it to disk and renames it to `path`, replacing any file
// there: readers see the old file or the whole new one, never a part. A writer
// destroyed before Commit (or whose Commit failed) removes its temporary file.
class AtomicFileWriter {
 public:
  static absl::StatusOr<std::unique_ptr<AtomicFileWriter>> Create(
      const std::string& path);
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
                                 absl::string_view contents);

}  // namespace distflow

#endif  // DISTFLOW_BASE_FILE_H_
