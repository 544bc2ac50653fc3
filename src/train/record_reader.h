// Reading TFRecord files (framing in train/record_writer.h), checking both
// CRCs of every record.
#ifndef DISTFLOW_TRAIN_RECORD_READER_H_
#define DISTFLOW_TRAIN_RECORD_READER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distflow {
namespace train {

// Every record of the file at `path`, in order. DATA_LOSS naming the file,
// the record's index and its byte offset for a CRC mismatch or a record cut
// short (as a killed writer may leave at the end); NOT_FOUND or another
// error naming the file if it cannot be read.
absl::StatusOr<std::vector<std::string>> ReadRecords(const std::string& path);

// The records of `bytes`, the contents of a record file, checked as
// ReadRecords checks them; errors name `path`.
absl::StatusOr<std::vector<std::string>> ParseRecords(absl::string_view bytes,
                                                      const std::string& path);

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_RECORD_READER_H_
