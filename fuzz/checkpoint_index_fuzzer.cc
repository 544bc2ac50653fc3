// Bytes -> a checkpoint index (<prefix>.index.json, train/checkpoint_files.h):
// what a restore reads first. A damaged index must be refused with an error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "train/checkpoint_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  auto index = distflow::train::ParseCheckpointIndex(text, "fuzz.index.json");
  if (index.ok()) {
    // What a restore does with it: every tensor names one of the shards.
    for (const auto& [name, tensor] : index->tensors) {
      if (tensor.shard < 0 ||
          static_cast<size_t>(tensor.shard) >= index->shards.size()) {
        __builtin_trap();
      }
      (void)tensor.shape.num_elements();
    }
  }
  return 0;
}
