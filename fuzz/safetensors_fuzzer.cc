// Bytes -> a safetensors file -> its header and tensors (core/safetensors.h):
// how a checkpoint from disk is read. A damaged or hostile file must be
// refused with an error, never crash or allocate beyond its size.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A file in memory: the reader opens a path, and /proc/self/fd names one.
  static const int fd = memfd_create("safetensors_fuzz", 0);
  if (fd < 0) return 0;
  if (ftruncate(fd, 0) != 0) return 0;
  if (size > 0 && pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) {
    return 0;
  }
  auto reader =
      distflow::SafetensorsReader::Open("/proc/self/fd/" + std::to_string(fd));
  if (!reader.ok()) return 0;
  for (const auto& entry : (*reader)->entries()) {
    (void)(*reader)->Read(entry.name);
  }
  return 0;
}
