// Reading files through zlib, which inflates gzip files and passes other
// files through unchanged, so every reader accepts both.
#ifndef DISTFLOW_DATA_GZ_FILE_H_
#define DISTFLOW_DATA_GZ_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"

struct gzFile_s;  // zlib's gzFile, declared here so that users need no zlib.h

namespace distflow {
namespace data {
namespace internal {

// A file open for sequential reading. Not thread-safe. Errors name the path.
class GzFile {
 public:
  // NOT_FOUND if `path` does not exist; FAILED_PRECONDITION if it is a
  // directory or cannot be opened.
  static absl::StatusOr<std::unique_ptr<GzFile>> Open(const std::string& path);
  ~GzFile();
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  // Reads up to `n` bytes into `buffer` and returns how many were read: fewer
  // than `n` only at the end of the data. DATA_LOSS for a read error or a
  // corrupt gzip stream; a gzip stream that ends early is not an error here
  // (the short count tells), but TruncationNote() then describes it.
  absl::StatusOr<size_t> Read(void* buffer, size_t n);
  // Reads and discards the rest of the data; returns how many bytes it held.
  absl::StatusOr<int64_t> SkipToEnd();

  // " (the gzip stream ends early: ...)" after a read that stopped at a cut
  // gzip stream, else "".
  std::string TruncationNote() const;
  // True if the file is gzip-compressed (known after the first Read).
  bool compressed() const;
  // Bytes on disk.
  int64_t file_size() const { return file_size_; }
  const std::string& path() const { return path_; }

 private:
  GzFile(std::string path, gzFile_s* file, int64_t file_size)
      : path_(std::move(path)), file_(file), file_size_(file_size) {}

  std::string path_;
  gzFile_s* file_;  // owned: closed by the destructor
  int64_t file_size_;
};

// The whole content of `path` (inflated if gzip-compressed).
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace internal
}  // namespace data
}  // namespace distflow

#endif  // DISTFLOW_DATA_GZ_FILE_H_
