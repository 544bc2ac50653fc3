// The TFRecord framing shared by the record writer and reader: each record is
//   uint64 length | uint32 masked CRC32C of those 8 bytes |
//   `length` bytes of data | uint32 masked CRC32C of the data,
// integers little-endian. See docs/formats.md.
#ifndef DISTFLOW_TRAIN_RECORD_FORMAT_H_
#define DISTFLOW_TRAIN_RECORD_FORMAT_H_

#include <cstddef>
#include <cstdint>

namespace distflow {
namespace train {

inline constexpr size_t kRecordHeaderBytes = 12;  // length and its CRC
inline constexpr size_t kRecordFooterBytes = 4;   // the data's CRC

// TFRecord stores CRCs masked (rotated right by 15 bits, plus a constant) so
// that the CRC of data that itself holds CRCs is not degenerate.
inline constexpr uint32_t kCrcMaskDelta = 0xa282ead8u;
inline uint32_t MaskCrc(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + kCrcMaskDelta;
}
inline uint32_t UnmaskCrc(uint32_t masked) {
  const uint32_t rotated = masked - kCrcMaskDelta;
  return (rotated >> 17) | (rotated << 15);
}

// Little-endian integers, whatever the host's byte order.
inline void EncodeFixed32(uint32_t v, char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>(v >> (8 * i));
}
inline void EncodeFixed64(uint64_t v, char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(v >> (8 * i));
}
inline uint32_t DecodeFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= uint32_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}
inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_RECORD_FORMAT_H_
