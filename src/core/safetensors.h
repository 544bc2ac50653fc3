// The safetensors file format (as read by numpy users and by PyTorch's
// safetensors package), with a CRC32C of every tensor's bytes:
//
//   [uint64 little-endian N][N bytes: JSON header, padded with spaces][data]
//
// The header maps each tensor name to {"dtype": "F32", "shape": [2, 3],
// "data_offsets": [begin, end]} (byte offsets into the data section, which the
// tensors fill end to end) and holds "__metadata__", a map of strings where
// distflow records its format version and each tensor's CRC32C. See
// docs/formats.md.
#ifndef DISTFLOW_CORE_SAFETENSORS_H_
#define DISTFLOW_CORE_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/file.h"
#include "distflow/tensor.h"

namespace distflow {

// The version of distflow's metadata this build writes and the newest it
// reads; recorded under kSafetensorsVersionKey.
inline constexpr int kSafetensorsVersion = 1;
inline constexpr char kSafetensorsVersionKey[] = "distflow_format_version";
// The metadata key of tensor `name`'s CRC32C, stored as 8 lowercase hex digits.
std::string SafetensorsCrcKey(absl::string_view name);

// The safetensors name of a dtype ("F32", "F64", "I32", "I64", "U8", "BOOL");
// INVALID_ARGUMENT for a dtype the format cannot hold (string, resource).
absl::StatusOr<std::string> SafetensorsDtypeName(DataType dtype);
// The dtype of a safetensors name; nullopt for names distflow does not read.
std::optional<DataType> DataTypeFromSafetensorsName(absl::string_view name);

// Writes `tensors` in order to `path` through a temporary file and a rename.
// `metadata` joins distflow's own entries. INVALID_ARGUMENT naming the tensor
// for an empty or repeated name, an uninitialized tensor or an unsupported
// dtype; the system's error naming the file for I/O failures.
absl::Status WriteSafetensors(
    const std::string& path,
    const std::vector<std::pair<std::string, Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata = {});

// Reads a safetensors file. Open reads and checks the header only; Read reads
// one tensor's bytes. Every inconsistency (a short file, bad JSON, offsets that
// overlap or leave gaps, a size that does not match the shape, a CRC32C that
// does not match) is DATA_LOSS naming the file and the tensor. Files written
// by other tools carry no CRCs and are read without that check; files written
// by distflow must have one for every tensor. Thread-safe.
class SafetensorsReader {
 public:
  struct Entry {
    std::string name;
    DataType dtype = DataType::kInvalid;
    TensorShape shape;
    uint64_t begin = 0;  // offsets into the data section
    uint64_t end = 0;
    std::optional<uint32_t> crc32c;
  };

  // NOT_FOUND if `path` does not exist; DATA_LOSS for a malformed header;
  // FAILED_PRECONDITION for a file from a newer distflow.
  static absl::StatusOr<std::unique_ptr<SafetensorsReader>> Open(
      const std::string& path);

  const std::string& path() const { return file_->path(); }
  // The tensors in the order of their data.
  const std::vector<Entry>& entries() const { return entries_; }
  // The entry named `name`; null if the file has none.
  const Entry* Find(absl::string_view name) const;
  const std::map<std::string, std::string>& metadata() const {
    return metadata_;
  }

  // The tensor `name`, its CRC32C checked. NOT_FOUND naming the tensor and the
  // file if absent.
  absl::StatusOr<Tensor> Read(absl::string_view name) const;

 private:
  SafetensorsReader(std::unique_ptr<RandomAccessFile> file, uint64_t data_start)
      : file_(std::move(file)), data_start_(data_start) {}
  absl::Status ParseHeader(absl::string_view header);

  std::unique_ptr<RandomAccessFile> file_;
  uint64_t data_start_;
  std::vector<Entry> entries_;
  std::map<std::string, size_t, std::less<>> index_;  // name -> entries_ index
  std::map<std::string, std::string> metadata_;
};

}  // namespace distflow

#endif  // DISTFLOW_CORE_SAFETENSORS_H_
