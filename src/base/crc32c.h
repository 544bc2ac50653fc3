// CRC32C (Castagnoli, polynomial 0x1EDC6F41, reflected): the checksum of
// checkpoint tensors and of TFRecord event files.
#ifndef DISTFLOW_BASE_CRC32C_H_
#define DISTFLOW_BASE_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace distflow {

// The CRC32C of `n` bytes at `data`: Crc32c("123456789", 9) == 0xE3069283.
uint32_t Crc32c(const void* data, size_t n);

// The CRC32C of A followed by the `n` bytes at `data`, where `crc` is the
// CRC32C of A: Crc32cExtend(Crc32c(a, na), b, nb) == Crc32c(a + b), and
// Crc32cExtend(0, data, n) == Crc32c(data, n).
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n);

namespace internal {
// Crc32cExtend computed with tables only, as on CPUs without a crc32
// instruction; Crc32cExtend uses the instruction where the build targets it.
uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t n);
}  // namespace internal

}  // namespace distflow

#endif  // DISTFLOW_BASE_CRC32C_H_
