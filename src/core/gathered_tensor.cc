#include "core/gathered_tensor.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

#include "absl/base/call_once.h"
#include "absl/strings/str_cat.h"

namespace distflow {
namespace {

class GatheredBuffer : public TensorBuffer {
 public:
  GatheredBuffer(DataType dtype, std::vector<Tensor> parts, int64_t elements)
      : dtype_(dtype), elements_(elements), parts_(std::move(parts)) {}

  // The contiguous copy, made by the first caller: some reader wants the
  // elements in one place (a local consumer, an encoder without gather).
  void* data() const override {
    absl::call_once(once_, [this] {
      copy_ = Tensor::Uninitialized(dtype_, TensorShape({elements_}));
      char* out = static_cast<char*>(copy_.raw_data());
      for (const Tensor& part : parts_) {
        std::memcpy(out, part.raw_data(), part.TotalBytes());
        out += part.TotalBytes();
      }
    });
    return copy_.raw_data();
  }
  size_t size() const override {
    return static_cast<size_t>(elements_) * DataTypeSize(dtype_);
  }
  const std::vector<Tensor>& parts() const { return parts_; }

 private:
  const DataType dtype_;
  const int64_t elements_;
  const std::vector<Tensor> parts_;
  mutable absl::once_flag once_;
  mutable Tensor copy_;
};

}  // namespace

absl::StatusOr<Tensor> GatherTensors(DataType dtype,
                                     std::vector<Tensor> parts) {
  if (DataTypeSize(dtype) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot gather tensors of ", DataTypeName(dtype),
                     ": only fixed-size element types can be gathered"));
  }
  int64_t elements = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].dtype() != dtype) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot gather part ", i, " of type ", DataTypeName(parts[i].dtype()),
          " into a tensor of ", DataTypeName(dtype)));
    }
    if (parts[i].NumElements() >
        std::numeric_limits<int64_t>::max() - elements) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot gather part ", i, " of ", parts[i].TypeString(),
                       ": the parts hold more elements than fit in int64"));
    }
    elements += parts[i].NumElements();
  }
  const TensorShape shape({elements});
  // The Tensor constructor requires the size to be one TensorByteSize allows.
  absl::Status size = TensorByteSize(dtype, shape).status();
  if (!size.ok()) return size;
  auto buffer =
      std::make_shared<GatheredBuffer>(dtype, std::move(parts), elements);
  return Tensor(dtype, shape, std::move(buffer));
}

ByteRanges TensorByteRanges(const Tensor& tensor) {
  ByteRanges ranges;
  size_t skip = tensor.buffer_offset();
  size_t left = tensor.TotalBytes();
  const auto* gathered =
      dynamic_cast<const GatheredBuffer*>(tensor.buffer().get());
  if (gathered == nullptr) {
    if (left > 0) {
      ranges.emplace_back(static_cast<const char*>(tensor.raw_data()), left);
    }
    return ranges;
  }
  for (const Tensor& part : gathered->parts()) {
    if (left == 0) break;
    const size_t bytes = part.TotalBytes();
    if (skip >= bytes) {
      skip -= bytes;
      continue;
    }
    const size_t n = std::min(bytes - skip, left);
    ranges.emplace_back(static_cast<const char*>(part.raw_data()) + skip, n);
    skip = 0;
    left -= n;
  }
  return ranges;
}

std::optional<Tensor> GatheredElements(const Tensor& tensor, int64_t begin,
                                       int64_t end) {
  const auto* gathered =
      dynamic_cast<const GatheredBuffer*>(tensor.buffer().get());
  if (gathered == nullptr || tensor.dims() != 1) return std::nullopt;
  const int64_t element = static_cast<int64_t>(DataTypeSize(tensor.dtype()));
  begin += static_cast<int64_t>(tensor.buffer_offset()) / element;
  end += static_cast<int64_t>(tensor.buffer_offset()) / element;
  int64_t part_begin = 0;
  for (const Tensor& part : gathered->parts()) {
    const int64_t part_end = part_begin + part.NumElements();
    if (begin >= part_begin && end <= part_end) {
      absl::StatusOr<Tensor> flat =
          part.Reshape(TensorShape({part.NumElements()}));
      if (!flat.ok()) return std::nullopt;
      return flat->Slice(begin - part_begin, end - part_begin);
    }
    if (begin < part_end) return std::nullopt;
    part_begin = part_end;
  }
  return std::nullopt;
}

}  // namespace distflow
