#include "base/file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace distflow {
namespace {

std::shared_ptr<const FileFaultHook>& FaultHookSlot() {
  static auto* slot = new std::shared_ptr<const FileFaultHook>();
  return *slot;
}

// The errno a test's fault hook injects into `call` on `path`, or 0.
int InjectedFault(absl::string_view call, const std::string& path) {
  const std::shared_ptr<const FileFaultHook> hook =
      std::atomic_load(&FaultHookSlot());
  return hook == nullptr ? 0 : (*hook)(call, path);
}

std::string DirectoryOf(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

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
    const std::string& path, int mode) {
  // Random, so that writers of the same path in several processes (two
  // tasks saving at once) never share a temporary file.
  std::random_device random;
  const uint64_t suffix = (uint64_t{random()} << 32) | random();
  std::string temp_path =
      absl::StrCat(path, ".tmp-", absl::Hex(suffix, absl::kZeroPad16));
  if (const int fault = InjectedFault("create", temp_path)) {
    return IoError("create", temp_path, fault);
  }
  const int fd =
      ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
             static_cast<mode_t>(mode));
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
  if (const int fault = InjectedFault("write", temp_path_)) {
    return IoError("write", temp_path_, fault);
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
  int fault = InjectedFault("fsync", temp_path_);
  if (fault != 0 || ::fsync(fd_) != 0) {
    return IoError("flush", temp_path_, fault != 0 ? fault : errno);
  }
  const int closed = ::close(fd_);
  fd_ = -1;
  if (closed != 0) return IoError("close", temp_path_, errno);
  fault = InjectedFault("rename", path_);
  if (fault != 0 || ::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    return IoError(absl::StrCat("rename '", temp_path_, "' to"), path_,
                   fault != 0 ? fault : errno);
  }
  committed_ = true;
  // The rename lives in the directory: until the directory is on disk, a
  // crash may bring back the old file (or none), and a caller that goes on to
  // delete what the new file replaces could lose both.
  return SyncDirectory(DirectoryOf(path_));
}

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view contents, int mode) {
  DF_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> writer,
                      AtomicFileWriter::Create(path, mode));
  DF_RETURN_IF_ERROR(writer->Append(contents));
  return writer->Commit();
}

absl::Status SyncDirectory(const std::string& dir) {
  if (const int fault = InjectedFault("fsync_dir", dir)) {
    return IoError("flush directory", dir, fault);
  }
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError("open directory", dir, errno);
  const int synced = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  // Some file systems cannot flush a directory (EINVAL): their renames are
  // as durable as they get.
  if (synced != 0 && error != EINVAL) {
    return IoError("flush directory", dir, error);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<FileLock>> FileLock::Acquire(
    const std::string& path, absl::Duration timeout) {
  if (const int fault = InjectedFault("lock", path)) {
    return IoError("lock", path, fault);
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return IoError("create lock file", path, errno);
  // Polled rather than blocking, so that a process that holds the lock and
  // hangs delays the others by `timeout`, not forever.
  const auto deadline =
      std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    if (error == EINTR) continue;
    if (error != EWOULDBLOCK) {
      ::close(fd);
      return IoError("lock", path, error);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::close(fd);
      return absl::DeadlineExceededError(absl::StrCat(
          "cannot lock '", path, "': another process has held it for ",
          absl::FormatDuration(timeout)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return std::unique_ptr<FileLock>(new FileLock(fd));
}

// Closing the descriptor releases the lock.
FileLock::~FileLock() { ::close(fd_); }

void SetFileFaultHookForTesting(FileFaultHook hook) {
  std::shared_ptr<const FileFaultHook> next;
  if (hook) next = std::make_shared<const FileFaultHook>(std::move(hook));
  std::atomic_store(&FaultHookSlot(), std::move(next));
}

}  // namespace distflow
