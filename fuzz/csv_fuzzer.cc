// Bytes -> the columns of a CSV file (data/decoders.h), with the options a
// reader may pass: header or not, a delimiter, fixed column types.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "data/decoders.h"
#include "distflow/data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the options; the rest is the file.
  const uint8_t pick = data[0];
  const absl::string_view text(reinterpret_cast<const char*>(data + 1),
                               size - 1);
  distflow::data::CsvOptions options;
  options.has_header = (pick & 1) != 0;
  options.delimiter = (pick & 2) != 0 ? '\t' : ',';
  if ((pick & 4) != 0) {
    options.column_types = {distflow::DataType::kInt32,
                            distflow::DataType::kDouble};
  } else if ((pick & 8) != 0) {
    options.column_types = {distflow::DataType::kInt64};
  }
  auto table = distflow::data::internal::ParseCsv(text, "fuzz.csv", options);
  if (table.ok() && !table->columns.empty()) {
    bool same_type = true;
    for (const auto& c : table->columns) {
      same_type = same_type && c.dtype() == table->columns[0].dtype();
    }
    if (same_type) (void)distflow::data::StackColumns(table->columns);
  }
  return 0;
}
