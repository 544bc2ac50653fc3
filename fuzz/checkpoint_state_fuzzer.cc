// Bytes -> a directory's `checkpoint` file (train/checkpoint_files.h), which
// every chief reads and rewrites.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "train/checkpoint_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  auto state = distflow::train::ParseCheckpointState(text, "fuzz/checkpoint");
  if (state.ok()) {
    for (const std::string& prefix : state->prefixes) {
      if (prefix.empty()) __builtin_trap();
    }
  }
  return 0;
}
