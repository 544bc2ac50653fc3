// CSV files of numbers, parsed into one typed vector per column.
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "data/decoders.h"
#include "data/gz_file.h"
#include "distflow/data.h"

namespace distflow {
namespace data {
namespace {

// The parsed values of one column, in the column's type.
struct Column {
  DataType type = DataType::kFloat;
  std::vector<float> floats;
  std::vector<double> doubles;
  std::vector<int32_t> int32s;
  std::vector<int64_t> int64s;

  // False if `text` is not a value of `type`.
  bool Append(absl::string_view text) {
    switch (type) {
      case DataType::kFloat: {
        float v;
        if (!absl::SimpleAtof(text, &v)) return false;
        floats.push_back(v);
        return true;
      }
      case DataType::kDouble: {
        double v;
        if (!absl::SimpleAtod(text, &v)) return false;
        doubles.push_back(v);
        return true;
      }
      case DataType::kInt32: {
        int32_t v;
        if (!absl::SimpleAtoi(text, &v)) return false;
        int32s.push_back(v);
        return true;
      }
      default: {
        int64_t v;
        if (!absl::SimpleAtoi(text, &v)) return false;
        int64s.push_back(v);
        return true;
      }
    }
  }

  Tensor ToTensor() const {
    switch (type) {
      case DataType::kFloat:
        return Tensor::Vector<float>(floats);
      case DataType::kDouble:
        return Tensor::Vector<double>(doubles);
      case DataType::kInt32:
        return Tensor::Vector<int32_t>(int32s);
      default:
        return Tensor::Vector<int64_t>(int64s);
    }
  }
};

absl::Status CheckColumnTypes(const std::string& path,
                              const std::vector<DataType>& types) {
  for (size_t c = 0; c < types.size(); ++c) {
    const DataType t = types[c];
    if (t != DataType::kFloat && t != DataType::kDouble &&
        t != DataType::kInt32 && t != DataType::kInt64) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": CsvOptions::column_types[", c, "] is ", DataTypeName(t),
          "; expected float32, float64, int32 or int64"));
    }
  }
  return absl::OkStatus();
}

std::string ShowDelimiter(char delimiter) {
  return delimiter == '\t' ? "tab"
                           : absl::StrCat("'", std::string(1, delimiter), "'");
}

}  // namespace

absl::StatusOr<CsvTable> ReadCsv(const std::string& path,
                                 const CsvOptions& options) {
  DF_RETURN_IF_ERROR(CheckColumnTypes(path, options.column_types));
  DF_ASSIGN_OR_RETURN(std::string content, internal::ReadFileToString(path));
  return internal::ParseCsv(content, path, options);
}

namespace internal {

absl::StatusOr<CsvTable> ParseCsv(absl::string_view content,
                                  const std::string& path,
                                  const CsvOptions& options) {
  DF_RETURN_IF_ERROR(CheckColumnTypes(path, options.column_types));

  CsvTable table;
  std::vector<Column> columns;
  bool columns_known = false;
  // Fixes the column count and types, from the options or from the first
  // line (header or data) that has `count` fields.
  auto set_columns = [&](size_t count, int64_t line_number) -> absl::Status {
    if (!options.column_types.empty() && options.column_types.size() != count) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", line_number, ": expected ", options.column_types.size(),
          " fields (one per CsvOptions::column_types entry), found ", count));
    }
    columns.resize(count);
    for (size_t c = 0; c < count; ++c) {
      if (!options.column_types.empty())
        columns[c].type = options.column_types[c];
    }
    table.column_names.assign(count, "");
    columns_known = true;
    return absl::OkStatus();
  };

  bool header_pending = options.has_header;
  int64_t line_number = 0;
  for (absl::string_view line : absl::StrSplit(content, '\n')) {
    ++line_number;
    if (absl::EndsWith(line, "\r")) line.remove_suffix(1);
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, options.delimiter);
    if (!columns_known)
      DF_RETURN_IF_ERROR(set_columns(fields.size(), line_number));
    if (fields.size() != columns.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", line_number, ": expected ", columns.size(),
          " fields separated by ", ShowDelimiter(options.delimiter), ", found ",
          fields.size()));
    }
    if (header_pending) {
      header_pending = false;
      for (size_t c = 0; c < fields.size(); ++c) {
        absl::string_view name = absl::StripAsciiWhitespace(fields[c]);
        if (name.size() >= 2 && name.front() == '"' && name.back() == '"') {
          name = name.substr(1, name.size() - 2);
        }
        table.column_names[c] = std::string(name);
      }
      continue;
    }
    for (size_t c = 0; c < fields.size(); ++c) {
      absl::string_view text = absl::StripAsciiWhitespace(fields[c]);
      if (text.empty() || !columns[c].Append(text)) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ":", line_number, ":", c + 1, ": expected ",
            columns[c].type == DataType::kFloat ||
                    columns[c].type == DataType::kDouble
                ? "a "
                : "an ",
            DataTypeName(columns[c].type), " value, found ",
            text.empty() ? std::string("an empty field")
                         : absl::StrCat("\"", absl::CEscape(fields[c]), "\"")));
      }
    }
    ++table.num_rows;
  }

  if (!columns_known) {
    // An empty file: columns come from the options, if any.
    DF_RETURN_IF_ERROR(set_columns(options.column_types.size(), line_number));
  }
  for (const Column& column : columns)
    table.columns.push_back(column.ToTensor());
  return table;
}

}  // namespace internal

absl::StatusOr<Tensor> StackColumns(const std::vector<Tensor>& columns) {
  if (columns.empty()) {
    return absl::InvalidArgumentError(
        "StackColumns: expected at least one column, got none");
  }
  const Tensor& first = columns[0];
  const size_t element_bytes = DataTypeSize(first.dtype());
  for (size_t c = 0; c < columns.size(); ++c) {
    const Tensor& t = columns[c];
    if (t.dims() != 1 || t.dtype() != first.dtype() ||
        t.dim_size(0) != first.dim_size(0) || element_bytes == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "StackColumns: column ", c, " is ", t.TypeString(), " and column 0 ",
          first.TypeString(),
          "; expected vectors of one fixed-size dtype and one length"));
    }
  }
  const int64_t n = first.dim_size(0);
  const int64_t k = static_cast<int64_t>(columns.size());
  Tensor out = Tensor::Uninitialized(first.dtype(), TensorShape({n, k}));
  char* to = static_cast<char*>(out.raw_data());
  for (int64_t c = 0; c < k; ++c) {
    const char* from = static_cast<const char*>(columns[c].raw_data());
    for (int64_t r = 0; r < n; ++r) {
      std::memcpy(to + (r * k + c) * element_bytes, from + r * element_bytes,
                  element_bytes);
    }
  }
  return out;
}

}  // namespace data
}  // namespace distflow
