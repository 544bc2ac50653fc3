// CRC32C (Castagnoli, polynomial 0x1EDC6F41, reflected), the checksum of
// TFRecord files and of distflow's checkpoints.
#ifndef DISTFLOW_BASE_CRC32C_H_
#define DISTFLOW_BASE_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace distflow {

// The CRC32C of `n` bytes at `data`: Crc32c("123456789", 9) == 0xE3069283.
uint32_t Crc32c(const void* data, size_t n);

// The CRC32C of A followed by the `n` bytes at `data`, given `crc` ==
// Crc32c(A): checksums data that arrives in pieces.
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n);

namespace crc32c_internal {
// The table-driven computation that Crc32cExtend uses when the CPU's CRC32
// instruction (SSE4.2) is not compiled in; exposed so tests check both.
uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n);
}  // namespace crc32c_internal

}  // namespace distflow

#endif  // DISTFLOW_BASE_CRC32C_H_
