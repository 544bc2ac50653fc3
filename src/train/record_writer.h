// Writing TFRecord files (framing in train/record_format.h), the files
// TensorFlow and TensorBoard read.
#ifndef DISTFLOW_TRAIN_RECORD_WRITER_H_
#define DISTFLOW_TRAIN_RECORD_WRITER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distflow {
namespace train {

// Appends records to a new file. Records are buffered in memory and reach the
// file whole, in order, on Flush(), on destruction, or when more than 1 MiB
// is pending; so a process that is killed leaves only complete records behind
// (unless it dies inside the write itself). Not thread-safe.
class RecordWriter {
 public:
  // Creates `path`; ALREADY_EXISTS if the file exists (it is never
  // overwritten), other errors name the file and the system's reason.
  static absl::StatusOr<std::unique_ptr<RecordWriter>> Create(
      const std::string& path);
  // Flushes (errors are lost: call Flush() first to see them) and closes.
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  // Appends one record.
  absl::Status Write(absl::string_view record);
  // Writes every pending record to the file and syncs it to the disk.
  absl::Status Flush();

  const std::string& path() const { return path_; }

 private:
  RecordWriter(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  // Hands the pending bytes to the operating system.
  absl::Status WritePending();

  std::string path_;
  int fd_;
  std::string pending_;
  // The first write error, returned by every later call.
  absl::Status status_;
};

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_RECORD_WRITER_H_
