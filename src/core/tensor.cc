#include "distflow/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/aligned_memory.h"
#include "base/logging.h"
#include "base/shared_arena.h"
#include "base/status_macros.h"
#include "core/type_dispatch.h"

namespace distflow {
namespace {

constexpr size_t kAlignment = 64;

// Bytes one element occupies in a buffer.
size_t ElementSize(DataType dtype) {
  switch (dtype) {
    case DataType::kString:
      return sizeof(std::string);
    case DataType::kResource:
      return sizeof(ResourceHandle);
    default:
      return DataTypeSize(dtype);
  }
}

// A 64-byte-aligned heap buffer (on huge pages when large, see
// base/aligned_memory.h), or, for a large buffer of numbers in a process
// with a tensor arena (a task's server), a block of the arena, which tasks of
// the same host map instead of copying (base/shared_arena.h). For object
// element types (string, resource) it constructs the elements and destroys
// them with the buffer.
class AlignedBuffer : public TensorBuffer {
 public:
  // `size` is TensorByteSize's for the elements.
  AlignedBuffer(DataType dtype, int64_t num_elements, size_t size, bool zero)
      : dtype_(dtype), num_elements_(num_elements), size_(size) {
    if (size_ >= kMinSharedBlockBytes && DataTypeSize(dtype) > 0) {
      arena_ = SharedArena::Get();
      if (arena_ != nullptr) block_ = arena_->Allocate(size_);
    }
    data_ = block_ >= 0 ? arena_->data(static_cast<uint32_t>(block_))
                        : AllocateAligned(Allocated(), kAlignment);
    if (data_ == nullptr) throw std::bad_alloc();
    if (dtype_ == DataType::kString) {
      auto* p = static_cast<std::string*>(data_);
      for (int64_t i = 0; i < num_elements_; ++i) new (p + i) std::string();
    } else if (dtype_ == DataType::kResource) {
      auto* p = static_cast<ResourceHandle*>(data_);
      for (int64_t i = 0; i < num_elements_; ++i) new (p + i) ResourceHandle();
    } else if (zero) {
      std::memset(data_, 0, size_);
    }
  }
  ~AlignedBuffer() override {
    if (dtype_ == DataType::kString) {
      auto* p = static_cast<std::string*>(data_);
      for (int64_t i = 0; i < num_elements_; ++i) p[i].~basic_string();
    } else if (dtype_ == DataType::kResource) {
      auto* p = static_cast<ResourceHandle*>(data_);
      for (int64_t i = 0; i < num_elements_; ++i) p[i].~ResourceHandle();
    }
    if (block_ >= 0) {
      arena_->Free(static_cast<uint32_t>(block_));
    } else {
      FreeAligned(data_, Allocated());
    }
  }
  void* data() const override { return data_; }
  size_t size() const override { return size_; }
  bool SharedWithOtherProcesses() const override {
    return block_ >= 0 && arena_->ReadElsewhere(static_cast<uint32_t>(block_));
  }

 private:
  // The bytes asked of the allocator: a whole number of alignment units.
  size_t Allocated() const {
    const size_t rounded = (size_ + kAlignment - 1) / kAlignment * kAlignment;
    return rounded == 0 ? kAlignment : rounded;
  }

  DataType dtype_;
  int64_t num_elements_;
  size_t size_;
  SharedArena* arena_ = nullptr;
  int64_t block_ = -1;  // the arena's block, or -1 for heap memory
  void* data_;
};

void AppendElement(std::string* out, float v) { absl::StrAppend(out, v); }
void AppendElement(std::string* out, double v) { absl::StrAppend(out, v); }
void AppendElement(std::string* out, int32_t v) { absl::StrAppend(out, v); }
void AppendElement(std::string* out, int64_t v) { absl::StrAppend(out, v); }
void AppendElement(std::string* out, uint8_t v) {
  absl::StrAppend(out, static_cast<int>(v));
}
void AppendElement(std::string* out, bool v) {
  out->append(v ? "true" : "false");
}
void AppendElement(std::string* out, const std::string& v) {
  absl::StrAppend(out, "\"", absl::CHexEscape(v), "\"");
}
void AppendElement(std::string* out, const ResourceHandle& v) {
  absl::StrAppend(out, "<", DataTypeName(v.dtype), " resource ",
                  v.container.empty() ? "" : "/", v.container, v.name, " on ",
                  v.device, ">");
}

// Writes the values in numpy's layout, recursing over dimensions.
template <typename T>
class ValuePrinter {
 public:
  ValuePrinter(const Tensor& t, bool summarize, int64_t edge_items)
      : data_(t.data<T>()),
        shape_(t.shape()),
        summarize_(summarize),
        edge_items_(edge_items) {
    strides_.assign(shape_.dims(), 1);
    for (int d = shape_.dims() - 2; d >= 0; --d) {
      strides_[d] = strides_[d + 1] * shape_.dim_size(d + 1);
    }
  }

  void Print(int dim, int64_t offset, std::string* out) const {
    if (dim == shape_.dims()) {
      AppendElement(out, data_[offset]);
      return;
    }
    const int64_t n = shape_.dim_size(dim);
    const int rank = shape_.dims();
    std::string separator = " ";
    if (dim < rank - 1) {
      separator = std::string(rank - dim - 1, '\n') + std::string(dim + 1, ' ');
    }
    out->push_back('[');
    for (int64_t i = 0; i < n; ++i) {
      if (summarize_ && n > 2 * edge_items_ && i == edge_items_) {
        absl::StrAppend(out, "...", separator);
        i = n - edge_items_;
      }
      Print(dim + 1, offset + i * strides_[dim], out);
      if (i + 1 < n) out->append(separator);
    }
    out->push_back(']');
  }

 private:
  const T* data_;
  const TensorShape& shape_;
  bool summarize_;
  int64_t edge_items_;
  std::vector<int64_t> strides_;
};

// A buffer for the elements of `dtype` and `shape`; throws std::bad_alloc when
// TensorByteSize refuses the size or the memory cannot be had.
std::shared_ptr<AlignedBuffer> NewBuffer(DataType dtype,
                                         const TensorShape& shape, bool zero) {
  absl::StatusOr<size_t> size = TensorByteSize(dtype, shape);
  if (!size.ok()) throw std::bad_alloc();
  return std::make_shared<AlignedBuffer>(dtype, shape.num_elements(), *size,
                                         zero);
}

}  // namespace

absl::StatusOr<size_t> TensorByteSize(DataType dtype,
                                      const TensorShape& shape) {
  if (!DataTypeIsValid(dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid dtype ", static_cast<int>(dtype),
                     " for a tensor of shape ", shape.DebugString()));
  }
  const size_t element = ElementSize(dtype);
  const uint64_t n = static_cast<uint64_t>(shape.num_elements());
  if (element != 0 && n > kMaxTensorBytes / element) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a tensor of ", DataTypeName(dtype), shape.DebugString(),
                     " would need more than the ", kMaxTensorBytes >> 30,
                     " GiB one tensor may have"));
  }
  return element * n;
}

Tensor::Tensor(DataType dtype, const TensorShape& shape)
    : dtype_(dtype), shape_(shape) {
  DF_CHECK(DataTypeIsValid(dtype))
      << "Tensor of invalid dtype " << static_cast<int>(dtype);
  buffer_ = NewBuffer(dtype, shape, /*zero=*/true);
}

absl::StatusOr<Tensor> Tensor::Create(DataType dtype, const TensorShape& shape,
                                      bool zero) {
  DF_ASSIGN_OR_RETURN(size_t size, TensorByteSize(dtype, shape));
  try {
    return Tensor(dtype, shape,
                  std::make_shared<AlignedBuffer>(dtype, shape.num_elements(),
                                                  size, zero));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of memory allocating ", size, " bytes for a tensor of ",
        DataTypeName(dtype), shape.DebugString()));
  }
}

Tensor::Tensor(DataType dtype, const TensorShape& shape,
               std::shared_ptr<TensorBuffer> buffer, size_t offset)
    : dtype_(dtype),
      shape_(shape),
      buffer_(std::move(buffer)),
      offset_(offset) {
  DF_CHECK(DataTypeIsValid(dtype))
      << "Tensor of invalid dtype " << static_cast<int>(dtype);
  DF_CHECK(buffer_ != nullptr);
  absl::StatusOr<size_t> bytes = TensorByteSize(dtype, shape);
  DF_CHECK(bytes.ok()) << bytes.status();
  DF_CHECK(offset_ <= buffer_->size() && *bytes <= buffer_->size() - offset_)
      << "buffer of " << buffer_->size() << " bytes is too small for "
      << TypeString() << " at offset " << offset_;
}

Tensor Tensor::Uninitialized(DataType dtype, const TensorShape& shape) {
  DF_CHECK(DataTypeIsValid(dtype))
      << "Tensor of invalid dtype " << static_cast<int>(dtype);
  return Tensor(dtype, shape, NewBuffer(dtype, shape, /*zero=*/false));
}

size_t Tensor::TotalBytes() const {
  return ElementSize(dtype_) * shape_.num_elements();
}

void* Tensor::raw_data() const {
  if (buffer_ == nullptr) return nullptr;
  return static_cast<char*>(buffer_->data()) + offset_;
}

void Tensor::CheckType(DataType requested) const {
  if (requested != dtype_) {
    Abort(absl::StrCat("Tensor of type ", DataTypeName(dtype_), " accessed as ",
                       DataTypeName(requested)));
  }
}

void Tensor::Abort(const std::string& message) {
  DF_LOG(Fatal) << message;
  std::abort();  // not reached: a fatal log aborts
}

Tensor Tensor::Slice(int64_t begin, int64_t end) const {
  DF_CHECK(dims() >= 1) << "Slice of a scalar";
  DF_CHECK(0 <= begin && begin <= end && end <= dim_size(0))
      << "Slice [" << begin << ", " << end << ") of " << TypeString();
  TensorShape shape;
  shape.AddDim(end - begin);
  for (int d = 1; d < dims(); ++d) shape.AddDim(dim_size(d));
  const int64_t row_elements =
      dim_size(0) == 0 ? 0 : NumElements() / dim_size(0);
  Tensor result = *this;
  result.shape_ = shape;
  result.offset_ = offset_ + begin * row_elements * ElementSize(dtype_);
  return result;
}

absl::StatusOr<Tensor> Tensor::Reshape(const TensorShape& shape) const {
  if (shape.num_elements() != NumElements()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot reshape ", TypeString(), " (", NumElements(), " elements) to ",
        shape.DebugString(), " (", shape.num_elements(), " elements)"));
  }
  Tensor result = *this;
  result.shape_ = shape;
  return result;
}

Tensor Tensor::Copy() const {
  if (!IsInitialized()) return Tensor();
  Tensor copy = Uninitialized(dtype_, shape_);
  if (dtype_ == DataType::kString || dtype_ == DataType::kResource) {
    absl::Status s = VisitDataType(dtype_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* from = data<T>();
      T* to = copy.data<T>();
      for (int64_t i = 0; i < NumElements(); ++i) to[i] = from[i];
      return absl::OkStatus();
    });
    (void)s;
  } else if (TotalBytes() > 0) {
    std::memcpy(copy.raw_data(), raw_data(), TotalBytes());
  }
  return copy;
}

std::string Tensor::TypeString() const {
  return absl::StrCat(DataTypeName(dtype_), shape_.DebugString());
}

std::string Tensor::DebugString(int64_t summarize_above,
                                int64_t edge_items) const {
  if (!IsInitialized()) return "<uninitialized tensor>";
  std::string out;
  // As numpy prints one: an empty tensor's dimensions can multiply past int64
  // ([2^40, 2^40, 0]), and printing a bracket pair per empty row could never
  // end.
  if (NumElements() == 0) return "[]";
  const bool summarize = NumElements() > summarize_above;
  absl::Status s = VisitDataType(dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    ValuePrinter<T>(*this, summarize, edge_items).Print(0, 0, &out);
    return absl::OkStatus();
  });
  (void)s;
  return out;
}

bool Tensor::Equals(const Tensor& other) const {
  if (dtype_ != other.dtype_ || shape_ != other.shape_) return false;
  if (!IsInitialized()) return true;
  bool equal = true;
  absl::Status s = VisitDataType(dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* a = data<T>();
    const T* b = other.data<T>();
    for (int64_t i = 0; i < NumElements() && equal; ++i) equal = a[i] == b[i];
    return absl::OkStatus();
  });
  (void)s;
  return equal;
}

std::ostream& operator<<(std::ostream& os, const Tensor& tensor) {
  return os << tensor.DebugString();
}

}  // namespace distflow
