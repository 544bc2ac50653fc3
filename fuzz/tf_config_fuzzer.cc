// Bytes -> a task from TF_CONFIG (distributed/tf_config.h), the JSON a
// launcher puts in every task's environment.
#include <cstddef>
#include <cstdint>
#include <string>

#include "distributed/tf_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto config = distflow::TaskConfigFromTfConfig(text);
  if (config.ok()) {
    (void)config->cluster.DebugString();
    (void)config->TaskDevice();
  }
  return 0;
}
