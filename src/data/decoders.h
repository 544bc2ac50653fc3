// The decoders behind ReadIdxFile and ReadCsv, over bytes in memory, so that
// tests and fuzz targets reach them without files.
#ifndef DISTFLOW_DATA_DECODERS_H_
#define DISTFLOW_DATA_DECODERS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "distflow/data.h"
#include "distflow/tensor.h"

namespace distflow {
namespace data {
namespace internal {

// The tensor of the uncompressed IDX file contents `bytes`, as ReadIdxFile
// reads it; errors name `path`.
absl::StatusOr<Tensor> DecodeIdx(absl::string_view bytes,
                                 const std::string& path);

// The table of the CSV text `content`, as ReadCsv reads it; errors name
// `path`.
absl::StatusOr<CsvTable> ParseCsv(absl::string_view content,
                                  const std::string& path,
                                  const CsvOptions& options);

}  // namespace internal
}  // namespace data
}  // namespace distflow

#endif  // DISTFLOW_DATA_DECODERS_H_
