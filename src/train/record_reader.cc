#include "train/record_reader.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "base/crc32c.h"
#include "train/record_format.h"

namespace distflow {
namespace train {

absl::StatusOr<std::vector<std::string>> ReadRecords(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const std::string message = absl::StrCat("cannot open record file '", path,
                                             "': ", std::strerror(errno));
    return errno == ENOENT ? absl::NotFoundError(message)
                           : absl::InternalError(message);
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  if (in.bad()) {
    return absl::InternalError(
        absl::StrCat("cannot read record file '", path, "'"));
  }

  return ParseRecords(bytes, path);
}

absl::StatusOr<std::vector<std::string>> ParseRecords(absl::string_view bytes,
                                                      const std::string& path) {
  std::vector<std::string> records;
  size_t offset = 0;
  auto corrupt = [&](absl::string_view what) {
    return absl::DataLossError(absl::StrCat("record file '", path, "': record ",
                                            records.size(), " at byte ", offset,
                                            ": ", what));
  };
  while (offset < bytes.size()) {
    const char* p = bytes.data() + offset;
    const size_t left = bytes.size() - offset;
    if (left < kRecordHeaderBytes) {
      return corrupt("header cut short (truncated file)");
    }
    const uint64_t length = DecodeFixed64(p);
    if (UnmaskCrc(DecodeFixed32(p + 8)) != Crc32c(p, 8)) {
      return corrupt("length CRC mismatch");
    }
    if (length > left - kRecordHeaderBytes ||
        left - kRecordHeaderBytes - length < kRecordFooterBytes) {
      return corrupt(absl::StrCat(
          "the ", length, "-byte record is cut short (truncated file)"));
    }
    const char* data = p + kRecordHeaderBytes;
    if (UnmaskCrc(DecodeFixed32(data + length)) != Crc32c(data, length)) {
      return corrupt("data CRC mismatch");
    }
    records.emplace_back(data, length);
    offset += kRecordHeaderBytes + length + kRecordFooterBytes;
  }
  return records;
}

}  // namespace train
}  // namespace distflow
