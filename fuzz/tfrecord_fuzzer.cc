// Bytes -> the records of a TFRecord file (train/record_reader.h): event files
// and record datasets. Lengths come from the file and must be checked.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "train/record_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)distflow::train::ParseRecords(bytes, "fuzz.tfrecord");
  return 0;
}
