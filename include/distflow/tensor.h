// Tensor: an n-dimensional array of one element type, in a refcounted buffer.
//
// Copying a Tensor is cheap: copies share the buffer (no element is copied), as
// do Slice() and Reshape(). Writing through one copy is visible through the
// others; use Copy() for a private copy. A Tensor is not synchronized:
// concurrent writes to a shared buffer are the caller's business. Buffers are
// 64-byte aligned.
#ifndef DISTFLOW_TENSOR_H_
#define DISTFLOW_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "distflow/tensor_shape.h"
#include "distflow/types.h"

namespace distflow {

// Memory that holds tensor elements, shared by every Tensor that views it.
// Subclasses own memory from elsewhere (such as a network buffer) so that it
// reaches a Tensor without a copy.
class TensorBuffer {
 public:
  virtual ~TensorBuffer() = default;
  virtual void* data() const = 0;
  virtual size_t size() const = 0;  // bytes
  // True while the memory must not be written in place because another
  // process reads it (a tensor offered to a task of the same host), or
  // because it is another process's. Whoever would update it copies first.
  virtual bool SharedWithOtherProcesses() const { return false; }
};

// The largest tensor distflow allocates: 64 GiB of elements. A shape from the
// network, a file or a graph that asks for more is refused before anything is
// allocated.
inline constexpr size_t kMaxTensorBytes = size_t{1} << 36;

// The bytes of element storage of a tensor of `dtype` and `shape` (for string
// and resource tensors, of the element objects): INVALID_ARGUMENT if `dtype`
// is not valid, RESOURCE_EXHAUSTED if the size overflows or exceeds
// kMaxTensorBytes. Every decoder of outside bytes sizes tensors with it.
absl::StatusOr<size_t> TensorByteSize(DataType dtype, const TensorShape& shape);

class Tensor {
 public:
  // An uninitialized tensor: dtype kInvalid, no buffer. IsInitialized() is
  // false.
  Tensor() = default;
  // A tensor of `shape` with zeroed elements (empty strings). `dtype` must be
  // valid. Throws std::bad_alloc, as std::vector does, when the memory cannot
  // be had or TensorByteSize refuses the size; code that sizes a tensor from
  // input uses Create instead.
  Tensor(DataType dtype, const TensorShape& shape);
  // A tensor over an existing buffer, starting `offset` bytes in; the buffer
  // must be large enough for `shape` and, for string or resource tensors, hold
  // constructed objects.
  Tensor(DataType dtype, const TensorShape& shape,
         std::shared_ptr<TensorBuffer> buffer, size_t offset = 0);

  // Elements not initialized for fixed-size types (faster for outputs that are
  // overwritten). Throws std::bad_alloc as the constructor does.
  static Tensor Uninitialized(DataType dtype, const TensorShape& shape);
  // A tensor of `shape` with zeroed elements, or the error of TensorByteSize
  // (naming the type and shape), or RESOURCE_EXHAUSTED if the memory cannot be
  // had. `zero` false leaves fixed-size elements uninitialized.
  static absl::StatusOr<Tensor> Create(DataType dtype, const TensorShape& shape,
                                       bool zero = true);

  template <typename T>
  static Tensor Scalar(T value);
  template <typename T>
  static Tensor Vector(std::initializer_list<T> values) {
    return Vector<T>(std::vector<T>(values));
  }
  template <typename T>
  static Tensor Vector(const std::vector<T>& values);
  // Rows of equal length, such as Tensor::Matrix<float>({{1, 2}, {3, 4}});
  // ragged rows are a programming error (use FromValues for data that comes
  // from input).
  template <typename T>
  static Tensor Matrix(std::initializer_list<std::initializer_list<T>> rows);
  // A tensor of `shape` holding `values` in row-major order; INVALID_ARGUMENT
  // if the count differs.
  template <typename T>
  static absl::StatusOr<Tensor> FromValues(const TensorShape& shape,
                                           absl::Span<const T> values);

  bool IsInitialized() const {
    return buffer_ != nullptr || dtype_ != DataType::kInvalid;
  }
  DataType dtype() const { return dtype_; }
  const TensorShape& shape() const { return shape_; }
  int dims() const { return shape_.dims(); }
  int64_t dim_size(int i) const { return shape_.dim_size(i); }
  int64_t NumElements() const { return shape_.num_elements(); }
  // Bytes of element storage (for string tensors, of the string objects, not
  // their contents).
  size_t TotalBytes() const;

  // Element access; T must match dtype() (a mismatch is a programming error and
  // aborts).
  template <typename T>
  T* data() {
    CheckType(DataTypeOf<T>::value);
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    CheckType(DataTypeOf<T>::value);
    return static_cast<const T*>(raw_data());
  }
  template <typename T>
  absl::Span<T> flat() {
    return absl::Span<T>(data<T>(), NumElements());
  }
  template <typename T>
  absl::Span<const T> flat() const {
    return absl::Span<const T>(data<T>(), NumElements());
  }
  // The single element of a tensor with one element.
  template <typename T>
  T& scalar();
  template <typename T>
  const T& scalar() const;

  void* raw_data() const;

  // Rows [begin, end) along dimension 0, sharing this tensor's buffer. Requires
  // dims() >= 1 and 0 <= begin <= end <= dim_size(0).
  Tensor Slice(int64_t begin, int64_t end) const;
  // The same elements under another shape, sharing the buffer; INVALID_ARGUMENT
  // if the element counts differ.
  absl::StatusOr<Tensor> Reshape(const TensorShape& shape) const;
  // A deep copy in a new buffer.
  Tensor Copy() const;
  // True if both view the same buffer.
  bool SharesBufferWith(const Tensor& other) const {
    return buffer_ != nullptr && buffer_ == other.buffer_;
  }
  const std::shared_ptr<TensorBuffer>& buffer() const { return buffer_; }
  size_t buffer_offset() const { return offset_; }

  // The values, numpy style: "[[1 2]\n [3 4]]". Dimensions longer than 2 *
  // edge_items are summarized with "..." once the tensor has more than
  // `summarize_above` elements.
  std::string DebugString(int64_t summarize_above = 1000,
                          int64_t edge_items = 3) const;
  // "float32[2,3]"
  std::string TypeString() const;

  // True if dtype, shape and every element are equal.
  bool Equals(const Tensor& other) const;

 private:
  void CheckType(DataType requested) const;
  // Reports a programming error (misuse of this class) and aborts.
  [[noreturn]] static void Abort(const std::string& message);

  DataType dtype_ = DataType::kInvalid;
  TensorShape shape_;
  std::shared_ptr<TensorBuffer> buffer_;
  size_t offset_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Tensor& tensor);

// ---- Implementation of the templates ----

template <typename T>
Tensor Tensor::Scalar(T value) {
  Tensor t(DataTypeOf<T>::value, TensorShape());
  *t.data<T>() = std::move(value);
  return t;
}

template <typename T>
Tensor Tensor::Vector(const std::vector<T>& values) {
  Tensor t(DataTypeOf<T>::value,
           TensorShape({static_cast<int64_t>(values.size())}));
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

template <typename T>
Tensor Tensor::Matrix(std::initializer_list<std::initializer_list<T>> rows) {
  const int64_t num_rows = static_cast<int64_t>(rows.size());
  const int64_t num_cols =
      num_rows == 0 ? 0 : static_cast<int64_t>(rows.begin()->size());
  Tensor t(DataTypeOf<T>::value, TensorShape({num_rows, num_cols}));
  T* out = t.data<T>();
  for (const auto& row : rows) {
    if (static_cast<int64_t>(row.size()) != num_cols) {
      Abort("Tensor::Matrix: rows of a matrix literal differ in length");
    }
    for (const T& v : row) *out++ = v;
  }
  return t;
}

template <typename T>
absl::StatusOr<Tensor> Tensor::FromValues(const TensorShape& shape,
                                          absl::Span<const T> values) {
  if (static_cast<int64_t>(values.size()) != shape.num_elements()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shape ", shape.DebugString(), " has ", shape.num_elements(),
        " elements but ", values.size(), " values were given"));
  }
  Tensor t(DataTypeOf<T>::value, shape);
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

template <typename T>
T& Tensor::scalar() {
  if (NumElements() != 1)
    Abort("Tensor::scalar() of a tensor of shape " + shape_.DebugString());
  return *data<T>();
}

template <typename T>
const T& Tensor::scalar() const {
  if (NumElements() != 1)
    Abort("Tensor::scalar() of a tensor of shape " + shape_.DebugString());
  return *data<T>();
}

}  // namespace distflow

#endif  // DISTFLOW_TENSOR_H_
