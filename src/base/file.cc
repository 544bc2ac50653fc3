#include "base/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace distflow {
namespace {

// An error for a failed system call on `path`, with errno's reason.
absl::Status IoError(absl::string_view what, const std::string& path,
                     int error) {
  const std::string message =
      absl::StrCat("cannot ", what, " '", path, "': ", std::strerror(error));
  switch (error) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::StatusOr<int> OpenForReading(const std::string& path, uint64_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("open", path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    return IoError("stat", path, error);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("'", path, "' is a directory, not a file"));
  }
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

}  // namespace

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  DF_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file,
                      RandomAccessFile::Open(path));
  std::string contents(file->size(), '\0');
  DF_RETURN_IF_ERROR(file->ReadAt(0, contents.size(), contents.data()));
  return contents;
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> RandomAccessFile::Open(
    const std::string& path) {
  uint64_t size = 0;
  DF_ASSIGN_OR_RETURN(int fd, OpenForReading(path, &size));
  return std::unique_ptr<RandomAccessFile>(
      new RandomAccessFile(path, fd, size));
}

RandomAccessFile::~RandomAccessFile() { ::close(fd_); }

absl::Status RandomAccessFile::ReadAt(uint64_t offset, size_t n,
                                      void* dst) const {
  char* out = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, out, n, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      return IoError("read", path_, errno);
    }
    if (got == 0) {
      return absl::DataLossError(absl::StrCat(
          "'", path_, "' ends at byte ", offset, " but ", n,
          " more bytes were expected there: the file is truncated"));
    }
    out += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::Create(
    const std::string& path) {
  // Random, so that writers of the same path in several processes (two
  // tasks saving at once) never share a temporary file.
  std::random_device random;
  const uint64_t suffix = (uint64_t{random()} << 32) | random();
  std::string temp_path =
      absl::StrCat(path, ".tmp-", absl::Hex(suffix, absl::kZeroPad16));
  const int fd =
      ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("create", temp_path, errno);
  return std::unique_ptr<AtomicFileWriter>(
      new AtomicFileWriter(path, std::move(temp_path), fd));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

absl::Status AtomicFileWriter::Append(absl::string_view data) {
  if (fd_ < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", temp_path_, "' is already closed"));
  }
  while (!data.empty()) {
    const ssize_t wrote = ::write(fd_, data.data(), data.size());
    if (wrote < 0) {
      if (errno == EINTR) continue;
      return IoError("write", temp_path_, errno);
    }
    data.remove_prefix(static_cast<size_t>(wrote));
  }
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::Commit() {
  if (fd_ < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", temp_path_, "' is already closed"));
  }
  // The data must be on disk before the rename makes it visible, or a crash
  // could leave a complete-looking name over missing bytes.
  if (::fsync(fd_) != 0) return IoError("flush", temp_path_, errno);
  const int closed = ::close(fd_);
  fd_ = -1;
  if (closed != 0) return IoError("close", temp_path_, errno);
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    return IoError(absl::StrCat("rename '", temp_path_, "' to"), path_, errno);
  }
  committed_ = true;
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view contents) {
  DF_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> writer,
                      AtomicFileWriter::Create(path));
  DF_RETURN_IF_ERROR(writer->Append(contents));
  return writer->Commit();
}

}  // namespace distflow
