#include "train/record_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/crc32c.h"
#include "train/record_format.h"

namespace distflow {
namespace train {
namespace {

// Pending bytes above which Write hands them to the system without a Flush.
constexpr size_t kMaxPendingBytes = size_t{1} << 20;

absl::Status ErrnoError(int err, absl::string_view what,
                        const std::string& path) {
  const std::string message =
      absl::StrCat("cannot ", what, " '", path, "': ", std::strerror(err));
  if (err == EEXIST) return absl::AlreadyExistsError(message);
  if (err == ENOENT) return absl::NotFoundError(message);
  if (err == EACCES || err == EPERM) {
    return absl::PermissionDeniedError(message);
  }
  return absl::InternalError(message);
}

void AppendMaskedCrc(const char* data, size_t n, std::string* out) {
  char bytes[4];
  EncodeFixed32(MaskCrc(Crc32c(data, n)), bytes);
  out->append(bytes, 4);
}

}  // namespace

absl::StatusOr<std::unique_ptr<RecordWriter>> RecordWriter::Create(
    const std::string& path) {
  // Event files are read by TensorBoard, often as a group member: 0640, but
  // not for everyone.
  const int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
  if (fd < 0) return ErrnoError(errno, "create record file", path);
  return std::unique_ptr<RecordWriter>(new RecordWriter(path, fd));
}

RecordWriter::~RecordWriter() {
  (void)Flush();
  close(fd_);
}

absl::Status RecordWriter::Write(absl::string_view record) {
  if (!status_.ok()) return status_;
  char length[8];
  EncodeFixed64(record.size(), length);
  pending_.append(length, 8);
  AppendMaskedCrc(length, 8, &pending_);
  pending_.append(record.data(), record.size());
  AppendMaskedCrc(record.data(), record.size(), &pending_);
  if (pending_.size() > kMaxPendingBytes) return WritePending();
  return absl::OkStatus();
}

absl::Status RecordWriter::WritePending() {
  size_t done = 0;
  while (done < pending_.size()) {
    const ssize_t n =
        write(fd_, pending_.data() + done, pending_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status_ = ErrnoError(errno, "write to record file", path_);
      return status_;
    }
    done += static_cast<size_t>(n);
  }
  pending_.clear();
  return absl::OkStatus();
}

absl::Status RecordWriter::Flush() {
  if (!status_.ok()) return status_;
  if (!pending_.empty()) {
    absl::Status s = WritePending();
    if (!s.ok()) return s;
  }
  if (fsync(fd_) != 0) {
    status_ = ErrnoError(errno, "sync record file", path_);
  }
  return status_;
}

}  // namespace train
}  // namespace distflow
