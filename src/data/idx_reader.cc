// IDX files: the header is the magic (0, 0, type, rank), then rank big-endian
// uint32 sizes; the payload follows with nothing after it.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "data/decoders.h"
#include "data/gz_file.h"
#include "distflow/data.h"

namespace distflow {
namespace data {
namespace {

constexpr uint8_t kUnsignedByte = 0x08;
// Deflate cannot expand data by more than about 1032:1, so a gzip file that
// claims more than this much payload per compressed byte is surely truncated
// or corrupt; counting its bytes beats allocating what the header says.
constexpr int64_t kMaxInflateRatio = 1100;

const char* IdxTypeName(uint8_t type) {
  switch (type) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return "unknown";
  }
}

// Bytes in memory, read the way GzFile reads an uncompressed file.
class MemorySource {
 public:
  explicit MemorySource(absl::string_view bytes) : bytes_(bytes) {}
  absl::StatusOr<size_t> Read(void* buffer, size_t n) {
    n = std::min(n, bytes_.size() - pos_);
    if (n > 0) std::memcpy(buffer, bytes_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  absl::StatusOr<int64_t> SkipToEnd() {
    const size_t left = bytes_.size() - pos_;
    pos_ = bytes_.size();
    return static_cast<int64_t>(left);
  }
  std::string TruncationNote() const { return ""; }
  bool compressed() const { return false; }
  int64_t file_size() const { return static_cast<int64_t>(bytes_.size()); }

 private:
  absl::string_view bytes_;
  size_t pos_ = 0;
};

// The IDX data of `file` (a GzFile or a MemorySource); errors name `path`.
template <typename Source>
absl::StatusOr<Tensor> DecodeIdxFrom(Source& file, const std::string& path) {
  uint8_t magic[4];
  absl::StatusOr<size_t> got = file.Read(magic, sizeof(magic));
  if (!got.ok()) return got.status();
  if (*got < sizeof(magic)) {
    return absl::DataLossError(
        absl::StrCat(path, ": expected a 4-byte IDX magic number, found ", *got,
                     " bytes", file.TruncationNote()));
  }
  if (magic[0] != 0 || magic[1] != 0) {
    return absl::DataLossError(absl::StrFormat(
        "%s: bad magic number %02x%02x%02x%02x: expected an IDX file, which "
        "starts with two zero bytes, a type byte and a rank byte",
        path, magic[0], magic[1], magic[2], magic[3]));
  }
  if (magic[2] != kUnsignedByte) {
    return absl::DataLossError(absl::StrFormat(
        "%s: IDX data type 0x%02x (%s) is not supported; expected 0x08 "
        "(unsigned byte)",
        path, magic[2], IdxTypeName(magic[2])));
  }
  const int rank = magic[3];
  if (rank == 0) {
    return absl::DataLossError(absl::StrCat(
        path, ": the IDX header declares rank 0; expected at least 1"));
  }

  std::vector<uint8_t> size_bytes(4 * rank);
  got = file.Read(size_bytes.data(), size_bytes.size());
  if (!got.ok()) return got.status();
  if (*got < size_bytes.size()) {
    return absl::DataLossError(absl::StrCat(
        path, ": the IDX header declares rank ", rank, ", so expected ",
        size_bytes.size(), " bytes of dimension sizes, found ", *got,
        file.TruncationNote()));
  }
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) {
    const uint8_t* b = &size_bytes[4 * i];
    dims[i] = (int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) |
              (int64_t{b[2]} << 8) | int64_t{b[3]};
  }
  absl::StatusOr<TensorShape> shape = TensorShape::FromDims(dims);
  if (!shape.ok()) {
    return absl::DataLossError(
        absl::StrCat(path, ": bad IDX dimensions: ", shape.status().message()));
  }
  const int64_t header_bytes = 4 + 4 * int64_t{rank};
  const int64_t expected = shape->num_elements();
  const std::string expectation = absl::StrCat(
      path, ": expected ", expected, " bytes of data after the ", header_bytes,
      "-byte header (shape ", shape->DebugString(), "), found ");

  const int64_t plausible = file.compressed()
                                ? file.file_size() * kMaxInflateRatio
                                : file.file_size() - header_bytes;
  if (expected > plausible) {
    absl::StatusOr<int64_t> found = file.SkipToEnd();
    if (!found.ok()) return found.status();
    return absl::DataLossError(
        absl::StrCat(expectation, *found, file.TruncationNote()));
  }

  absl::StatusOr<Tensor> created =
      Tensor::Create(DataType::kUInt8, *shape, /*zero=*/false);
  if (!created.ok()) {
    return absl::Status(created.status().code(),
                        absl::StrCat(path, ": ", created.status().message()));
  }
  Tensor tensor = *std::move(created);
  got = file.Read(tensor.raw_data(), static_cast<size_t>(expected));
  if (!got.ok()) return got.status();
  if (static_cast<int64_t>(*got) < expected) {
    return absl::DataLossError(
        absl::StrCat(expectation, *got, file.TruncationNote()));
  }
  absl::StatusOr<int64_t> trailing = file.SkipToEnd();
  if (!trailing.ok()) return trailing.status();
  if (*trailing > 0) {
    return absl::DataLossError(absl::StrCat(expectation, expected + *trailing,
                                            ": ", *trailing,
                                            " bytes of trailing data"));
  }
  const std::string note = file.TruncationNote();
  if (!note.empty()) {
    return absl::DataLossError(absl::StrCat(path, ": corrupt file", note));
  }
  return tensor;
}

}  // namespace

absl::StatusOr<Tensor> ReadIdxFile(const std::string& path) {
  auto opened = internal::GzFile::Open(path);
  if (!opened.ok()) return opened.status();
  return DecodeIdxFrom(**opened, path);
}

namespace internal {

absl::StatusOr<Tensor> DecodeIdx(absl::string_view bytes,
                                 const std::string& path) {
  MemorySource source(bytes);
  return DecodeIdxFrom(source, path);
}

}  // namespace internal
}  // namespace data
}  // namespace distflow
