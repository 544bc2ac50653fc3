// What fuzz targets that decode a sequence of messages share: reading fixed
// fields off the input, and a dimension that is small or a power of two up to
// 2^63 (so that products wrap).
#ifndef DISTFLOW_FUZZ_FUZZ_INPUT_H_
#define DISTFLOW_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace distflow {
namespace fuzz {

struct Input {
  const uint8_t* data;
  size_t size;
  // Copies the next `n` bytes to `out`; false if fewer are left.
  bool Take(void* out, size_t n) {
    if (size < n) return false;
    std::memcpy(out, data, n);
    data += n;
    size -= n;
    return true;
  }
};

inline int64_t Dim(uint8_t code) {
  return code < 128 ? code : int64_t{1} << (code % 63);
}

}  // namespace fuzz
}  // namespace distflow

#endif  // DISTFLOW_FUZZ_FUZZ_INPUT_H_
