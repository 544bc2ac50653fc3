#include "core/safetensors.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/crc32c.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"

// The format stores elements little-endian; tensors hold them in host order.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors I/O assumes a little-endian host");

namespace distflow {
namespace {

using Json = nlohmann::json;

constexpr char kMetadataKey[] = "__metadata__";
// As in the reference implementation: a larger header is refused rather than
// allocated.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

constexpr std::pair<DataType, const char*> kDtypeNames[] = {
    {DataType::kFloat, "F32"}, {DataType::kDouble, "F64"},
    {DataType::kInt32, "I32"}, {DataType::kInt64, "I64"},
    {DataType::kUInt8, "U8"},  {DataType::kBool, "BOOL"},
};

std::string CrcHex(uint32_t crc) {
  return absl::StrCat(absl::Hex(crc, absl::kZeroPad8));
}

absl::Status Corrupt(absl::string_view path, absl::string_view what) {
  return absl::DataLossError(
      absl::StrCat("safetensors file '", path, "' is corrupt: ", what));
}

// `value` for an error message, kept short. Nested values are not printed:
// dump() recurses, and a hostile header nests arrays millions deep.
std::string ShortJson(const Json& value) {
  constexpr size_t kMaxChars = 80;
  bool flat = value.is_primitive();
  if (value.is_array()) {
    flat = std::all_of(value.begin(), value.end(),
                       [](const Json& v) { return v.is_primitive(); });
  }
  if (!flat) return absl::StrCat("a nested JSON ", value.type_name());
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > kMaxChars) text = text.substr(0, kMaxChars) + "...";
  return text;
}

}  // namespace

std::string SafetensorsCrcKey(absl::string_view name) {
  return absl::StrCat("crc32c/", name);
}

std::optional<DataType> DataTypeFromSafetensorsName(absl::string_view name) {
  for (const auto& [dtype, n] : kDtypeNames) {
    if (name == n) return dtype;
  }
  return std::nullopt;
}

absl::StatusOr<std::string> SafetensorsDtypeName(DataType dtype) {
  for (const auto& [d, name] : kDtypeNames) {
    if (d == dtype) return std::string(name);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("safetensors files cannot hold ", DataTypeName(dtype),
                   " tensors; only float32, float64, int32, int64, uint8 "
                   "and bool"));
}

absl::Status WriteSafetensors(
    const std::string& path,
    const std::vector<std::pair<std::string, Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  Json meta = Json::object();
  for (const auto& [key, value] : metadata) meta[key] = value;
  meta[kSafetensorsVersionKey] = std::to_string(kSafetensorsVersion);
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    const std::string culprit = absl::StrCat(
        "cannot write tensor '", name, "' to safetensors file '", path, "': ");
    if (name.empty() || name == kMetadataKey || header.contains(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          culprit, "tensor names must be unique, non-empty and not '",
          kMetadataKey, "'"));
    }
    if (!tensor.IsInitialized()) {
      return absl::InvalidArgumentError(
          absl::StrCat(culprit, "the tensor is uninitialized"));
    }
    auto dtype = SafetensorsDtypeName(tensor.dtype());
    if (!dtype.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(culprit, dtype.status().message()));
    }
    const uint64_t bytes = tensor.TotalBytes();
    header[name] = {{"dtype", *dtype},
                    {"shape", tensor.shape().dim_sizes()},
                    {"data_offsets", {offset, offset + bytes}}};
    meta[SafetensorsCrcKey(name)] = CrcHex(Crc32c(tensor.raw_data(), bytes));
    offset += bytes;
  }
  header[kMetadataKey] = std::move(meta);

  std::string text;
  try {
    text = header.dump();
  } catch (const Json::exception& e) {  // a name that is not valid UTF-8
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write safetensors file '", path, "': ", e.what()));
  }
  // Spaces pad the header so the data starts 8-byte aligned, as the reference
  // implementation does; readers that map the file can view it in place.
  text.append((8 - text.size() % 8) % 8, ' ');
  char length[8];
  const uint64_t n = text.size();
  std::memcpy(length, &n, sizeof(n));

  DF_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> writer,
                      AtomicFileWriter::Create(path));
  DF_RETURN_IF_ERROR(writer->Append(absl::string_view(length, sizeof(length))));
  DF_RETURN_IF_ERROR(writer->Append(text));
  for (const auto& [name, tensor] : tensors) {
    DF_RETURN_IF_ERROR(writer->Append(absl::string_view(
        static_cast<const char*>(tensor.raw_data()), tensor.TotalBytes())));
  }
  return writer->Commit();
}

absl::StatusOr<std::unique_ptr<SafetensorsReader>> SafetensorsReader::Open(
    const std::string& path) {
  DF_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file,
                      RandomAccessFile::Open(path));
  if (file->size() < 8) {
    return Corrupt(path, absl::StrCat("it has ", file->size(),
                                      " bytes, fewer than the 8 of the header "
                                      "length: the file is truncated"));
  }
  uint64_t n = 0;
  DF_RETURN_IF_ERROR(file->ReadAt(0, sizeof(n), &n));
  if (n > kMaxHeaderBytes || n > file->size() - 8) {
    return Corrupt(path, absl::StrCat("its header length is ", n,
                                      " bytes but the file has ", file->size(),
                                      " bytes: the file is truncated or not "
                                      "safetensors"));
  }
  std::string header(n, '\0');
  DF_RETURN_IF_ERROR(file->ReadAt(8, n, header.data()));
  auto reader = std::unique_ptr<SafetensorsReader>(
      new SafetensorsReader(std::move(file), 8 + n));
  DF_RETURN_IF_ERROR(reader->ParseHeader(header));
  return reader;
}

absl::Status SafetensorsReader::ParseHeader(absl::string_view text) {
  const std::string& path = file_->path();
  Json header;
  try {
    header = Json::parse(text);
  } catch (const Json::exception& e) {
    return Corrupt(path, absl::StrCat("its header is not JSON: ", e.what()));
  }
  if (!header.is_object()) {
    return Corrupt(path, "its header is not a JSON object");
  }
  if (auto meta = header.find(kMetadataKey); meta != header.end()) {
    if (!meta->is_object()) {
      return Corrupt(path, "__metadata__ is not a map of strings");
    }
    for (const auto& [key, value] : meta->items()) {
      if (!value.is_string()) {
        return Corrupt(path, absl::StrCat("__metadata__ entry '", key,
                                          "' is not a string"));
      }
      metadata_[key] = value.get<std::string>();
    }
  }
  int version = 0;
  const auto version_it = metadata_.find(kSafetensorsVersionKey);
  const bool from_distflow = version_it != metadata_.end();
  if (from_distflow) {
    if (!absl::SimpleAtoi(version_it->second, &version) || version < 1) {
      return Corrupt(path, absl::StrCat("format version '", version_it->second,
                                        "' is not a positive number"));
    }
    if (version > kSafetensorsVersion) {
      return absl::FailedPreconditionError(absl::StrCat(
          "safetensors file '", path, "' has distflow format version ", version,
          " but this build reads up to version ", kSafetensorsVersion,
          "; read it with a newer distflow"));
    }
  }

  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) continue;
    const std::string culprit = absl::StrCat("tensor '", name, "'");
    Entry e;
    e.name = name;
    const Json* dtype = value.is_object() && value.contains("dtype")
                            ? &value["dtype"]
                            : nullptr;
    if (dtype == nullptr || !dtype->is_string()) {
      return Corrupt(path, absl::StrCat(culprit, " has no dtype"));
    }
    const auto parsed = DataTypeFromSafetensorsName(dtype->get<std::string>());
    if (!parsed) {
      return Corrupt(path,
                     absl::StrCat(culprit, " has dtype ", ShortJson(*dtype),
                                  ", which distflow does not read"));
    }
    e.dtype = *parsed;
    // (Both branches are lvalues: a copy of a value nested a million deep
    // would recurse a million frames deep.)
    static const Json kAbsent;
    static const Json kNoDims = Json::array();
    const Json& shape = value.contains("shape") ? value["shape"] : kAbsent;
    std::vector<int64_t> dims;
    for (const Json& d : shape.is_array() ? shape : kNoDims) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > INT64_MAX) {
        return Corrupt(path,
                       absl::StrCat(culprit, " has shape ", ShortJson(shape)));
      }
      dims.push_back(d.get<int64_t>());
    }
    auto tensor_shape = TensorShape::FromDims(dims);
    if (!shape.is_array() || !tensor_shape.ok()) {
      return Corrupt(path,
                     absl::StrCat(culprit, " has shape ", ShortJson(shape)));
    }
    e.shape = *tensor_shape;
    const Json& offsets =
        value.contains("data_offsets") ? value["data_offsets"] : kAbsent;
    if (!offsets.is_array() || offsets.size() != 2 ||
        !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned() ||
        offsets[0].get<uint64_t>() > offsets[1].get<uint64_t>()) {
      return Corrupt(path, absl::StrCat(culprit, " has data_offsets ",
                                        ShortJson(offsets)));
    }
    e.begin = offsets[0].get<uint64_t>();
    e.end = offsets[1].get<uint64_t>();
    absl::StatusOr<size_t> expected = TensorByteSize(e.dtype, e.shape);
    if (!expected.ok()) {
      // No file holds a tensor too large for memory: the header is damaged.
      return Corrupt(path,
                     absl::StrCat(culprit, ": ", expected.status().message()));
    }
    if (e.end - e.begin != *expected) {
      return Corrupt(
          path,
          absl::StrCat(culprit, " of shape ", e.shape.DebugString(), " holds ",
                       e.end - e.begin, " bytes, not ", *expected));
    }
    if (auto crc = metadata_.find(SafetensorsCrcKey(name));
        crc != metadata_.end()) {
      uint32_t value32 = 0;
      if (crc->second.size() != 8 ||
          !absl::SimpleHexAtoi(crc->second, &value32)) {
        return Corrupt(path, absl::StrCat(culprit, " has CRC32C '", crc->second,
                                          "', not 8 hex digits"));
      }
      e.crc32c = value32;
    } else if (from_distflow) {
      return Corrupt(path, absl::StrCat(culprit, " has no CRC32C"));
    }
    entries_.push_back(std::move(e));
  }

  // The tensors must tile the data section exactly, as in the reference
  // implementation: a gap, an overlap or a short file means damage.
  std::sort(entries_.begin(), entries_.end(),
            [](const Entry& a, const Entry& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  const uint64_t data_bytes = file_->size() - data_start_;
  uint64_t next = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (e.begin != next) {
      return Corrupt(
          path, absl::StrCat(
                    "tensor '", e.name, "' starts at data byte ", e.begin,
                    " but the previous tensor",
                    i == 0 ? "" : absl::StrCat(" '", entries_[i - 1].name, "'"),
                    " ends at ", next));
    }
    if (e.end > data_bytes) {
      return Corrupt(
          path, absl::StrCat("tensor '", e.name, "' ends at data byte ", e.end,
                             " but the file holds ", data_bytes,
                             " bytes of data: the file is truncated"));
    }
    next = e.end;
    index_[e.name] = i;
  }
  if (next != data_bytes) {
    return Corrupt(path, absl::StrCat("it has ", data_bytes - next,
                                      " bytes after its last tensor"));
  }
  return absl::OkStatus();
}

const SafetensorsReader::Entry* SafetensorsReader::Find(
    absl::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

absl::StatusOr<Tensor> SafetensorsReader::Read(absl::string_view name) const {
  const Entry* e = Find(name);
  if (e == nullptr) {
    return absl::NotFoundError(absl::StrCat("safetensors file '", path(),
                                            "' has no tensor '", name, "'"));
  }
  DF_ASSIGN_OR_RETURN(Tensor t,
                      Tensor::Create(e->dtype, e->shape, /*zero=*/false));
  const size_t bytes = e->end - e->begin;
  DF_RETURN_IF_ERROR(
      file_->ReadAt(data_start_ + e->begin, bytes, t.raw_data()));
  if (e->crc32c) {
    const uint32_t actual = Crc32c(t.raw_data(), bytes);
    if (actual != *e->crc32c) {
      return Corrupt(
          path(), absl::StrCat("the bytes of tensor '", name, "' have CRC32C ",
                               CrcHex(actual), " but the header records ",
                               CrcHex(*e->crc32c)));
    }
  }
  if (e->dtype == DataType::kBool) {
    // Any byte other than 0 or 1 would be an invalid bool.
    auto* b = static_cast<uint8_t*>(t.raw_data());
    for (size_t i = 0; i < bytes; ++i) b[i] = b[i] != 0;
  }
  return t;
}

}  // namespace distflow
