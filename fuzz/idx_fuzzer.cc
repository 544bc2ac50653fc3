// Bytes -> the tensor of an IDX file (MNIST's format, data/decoders.h): the
// header declares a rank and dimensions that must not size the allocation
// beyond the data.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "data/decoders.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto tensor = distflow::data::internal::DecodeIdx(bytes, "fuzz.idx");
  if (tensor.ok() && tensor->TotalBytes() > size) __builtin_trap();
  return 0;
}
