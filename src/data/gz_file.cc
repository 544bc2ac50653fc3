#include "data/gz_file.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace distflow {
namespace data {
namespace internal {
namespace {

// gzread takes an unsigned int count; stay well inside it.
constexpr size_t kMaxChunk = size_t{1} << 30;
// A larger buffer than zlib's default 8 KiB makes inflating ~2x faster.
constexpr unsigned kBufferBytes = 1 << 17;

}  // namespace

absl::StatusOr<std::unique_ptr<GzFile>> GzFile::Open(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    const int err = errno;
    std::string message =
        absl::StrCat(path, ": cannot open: ", std::strerror(err));
    if (err == ENOENT) return absl::NotFoundError(message);
    return absl::FailedPreconditionError(message);
  }
  if (S_ISDIR(info.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": is a directory; expected a file"));
  }
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  gzbuffer(file, kBufferBytes);
  return std::unique_ptr<GzFile>(
      new GzFile(path, file, static_cast<int64_t>(info.st_size)));
}

GzFile::~GzFile() { gzclose(file_); }

absl::StatusOr<size_t> GzFile::Read(void* buffer, size_t n) {
  char* out = static_cast<char*>(buffer);
  size_t total = 0;
  while (total < n) {
    const unsigned chunk =
        static_cast<unsigned>(std::min(n - total, kMaxChunk));
    const int got = gzread(file_, out + total, chunk);
    if (got < 0) {
      int errnum = Z_OK;
      const char* message = gzerror(file_, &errnum);
      return absl::DataLossError(absl::StrCat(
          path_, ": read failed after ", total,
          " bytes: ", errnum == Z_ERRNO ? std::strerror(errno) : message));
    }
    total += static_cast<size_t>(got);
    if (got == 0 || static_cast<unsigned>(got) < chunk) break;
  }
  // A short count may hide corrupt data that zlib reports on the next call.
  int errnum = Z_OK;
  const char* message = gzerror(file_, &errnum);
  if (errnum != Z_OK && errnum != Z_BUF_ERROR) {
    return absl::DataLossError(absl::StrCat(
        path_, ": corrupt data after ", total, " bytes of this read: ",
        errnum == Z_ERRNO ? std::strerror(errno) : message));
  }
  return total;
}

absl::StatusOr<int64_t> GzFile::SkipToEnd() {
  char scratch[1 << 16];
  int64_t total = 0;
  while (true) {
    absl::StatusOr<size_t> got = Read(scratch, sizeof(scratch));
    if (!got.ok()) return got.status();
    total += static_cast<int64_t>(*got);
    if (*got < sizeof(scratch)) return total;
  }
}

std::string GzFile::TruncationNote() const {
  int errnum = Z_OK;
  const char* message = gzerror(file_, &errnum);
  if (errnum == Z_BUF_ERROR) {
    return absl::StrCat(" (the gzip stream ends early: ", message, ")");
  }
  return "";
}

bool GzFile::compressed() const { return gzdirect(file_) == 0; }

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  auto file = GzFile::Open(path);
  if (!file.ok()) return file.status();
  std::string content;
  // Raw files read in one call; gzip files grow the buffer as they inflate.
  size_t capacity = std::max<size_t>((*file)->file_size(), 1 << 16);
  while (true) {
    const size_t old_size = content.size();
    content.resize(old_size + capacity);
    absl::StatusOr<size_t> got = (*file)->Read(&content[old_size], capacity);
    if (!got.ok()) return got.status();
    content.resize(old_size + *got);
    if (*got < capacity) break;
    capacity = content.size();
  }
  const std::string note = (*file)->TruncationNote();
  if (!note.empty()) {
    return absl::DataLossError(absl::StrCat(path, ": corrupt file", note));
  }
  return content;
}

}  // namespace internal
}  // namespace data
}  // namespace distflow
