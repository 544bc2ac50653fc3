#include "base/crc32c.h"

#include <array>
#include <cstring>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
#endif

namespace distflow {
namespace {

constexpr uint32_t kReversedPolynomial = 0x82F63B78;

// Slicing-by-8 tables: kTables[k][b] is the CRC register after byte b followed
// by k zero bytes, so eight input bytes fold in with eight independent lookups.
using Tables = std::array<std::array<uint32_t, 256>, 8>;
constexpr Tables MakeTables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc >> 1) ^ ((crc & 1) ? kReversedPolynomial : 0);
    }
    t[0][b] = crc;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
    }
  }
  return t;
}
constexpr Tables kTables = MakeTables();

// Both updates take and return the running register (the CRC inverted).
uint32_t UpdatePortable(uint32_t crc, const uint8_t* p, size_t n) {
  for (; n >= 8; n -= 8, p += 8) {
    const uint32_t lo = (uint32_t{p[0]} | uint32_t{p[1]} << 8 |
                         uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24) ^
                        crc;
    crc = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^
          kTables[5][(lo >> 16) & 0xFF] ^ kTables[4][lo >> 24] ^
          kTables[3][p[4]] ^ kTables[2][p[5]] ^ kTables[1][p[6]] ^
          kTables[0][p[7]];
  }
  for (; n > 0; --n, ++p) crc = (crc >> 8) ^ kTables[0][(crc ^ *p) & 0xFF];
  return crc;
}

uint32_t Update(uint32_t crc, const uint8_t* p, size_t n) {
#if defined(__SSE4_2__)
  // SSE4.2's crc32 instruction computes exactly this polynomial, about ten
  // times faster than the tables.
  uint64_t crc64 = crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    crc64 = _mm_crc32_u64(crc64, word);
  }
  crc = static_cast<uint32_t>(crc64);
  for (; n > 0; --n, ++p) crc = _mm_crc32_u8(crc, *p);
  return crc;
#else
  return UpdatePortable(crc, p, n);
#endif
}

}  // namespace

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n) {
  return ~Update(~crc, static_cast<const uint8_t*>(data), n);
}

uint32_t Crc32c(const void* data, size_t n) { return Crc32cExtend(0, data, n); }

namespace internal {
uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t n) {
  return ~UpdatePortable(~crc, static_cast<const uint8_t*>(data), n);
}
}  // namespace internal

}  // namespace distflow
