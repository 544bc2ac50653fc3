// Helpers for the data tests: temporary directories and files written raw or
// gzip'd, and IDX file contents.
#ifndef DISTFLOW_DATA_DATA_TEST_UTIL_H_
#define DISTFLOW_DATA_DATA_TEST_UTIL_H_

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace distflow {
namespace data {
namespace test {

// A fresh directory under the test's temporary directory.
inline std::string MakeTempDir() {
  std::string pattern = ::testing::TempDir();
  if (pattern.empty() || pattern.back() != '/') pattern += '/';
  pattern += "distflow_data_XXXXXX";
  char* dir = mkdtemp(pattern.data());
  EXPECT_NE(dir, nullptr) << "mkdtemp " << pattern;
  return pattern;
}

inline void WriteRawFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline void WriteGzipFile(const std::string& path, const std::string& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr) << path;
  if (!bytes.empty()) {
    ASSERT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
  }
  ASSERT_EQ(gzclose(file), Z_OK);
}

// The header of an IDX file of unsigned bytes with these dimensions.
inline std::string IdxHeader(const std::vector<uint32_t>& dims,
                             uint8_t type = 0x08) {
  std::string header = {0, 0, static_cast<char>(type),
                        static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      header.push_back(static_cast<char>((d >> shift) & 0xff));
    }
  }
  return header;
}

// An IDX file of unsigned bytes: header plus `payload`.
inline std::string IdxFile(const std::vector<uint32_t>& dims,
                           const std::vector<uint8_t>& payload) {
  return IdxHeader(dims) + std::string(payload.begin(), payload.end());
}

}  // namespace test
}  // namespace data
}  // namespace distflow

#endif  // DISTFLOW_DATA_DATA_TEST_UTIL_H_
