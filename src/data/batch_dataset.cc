// Batch: stacks consecutive elements. In row mode it gathers the chosen rows
// straight from the source tensors, one memcpy per row and component.
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "data/dataset_node.h"

namespace distflow {
namespace data {
namespace internal {
namespace {

// [n] followed by the dimensions of `row_shape`.
TensorShape BatchShape(int64_t n, const TensorShape& row_shape) {
  TensorShape shape({n});
  for (int64_t d : row_shape.dim_sizes()) shape.AddDim(d);
  return shape;
}

// Copies `count` elements from `from` to `to`; object types by assignment.
void CopyElements(DataType dtype, const void* from, void* to, int64_t count) {
  if (dtype == DataType::kString) {
    const auto* src = static_cast<const std::string*>(from);
    auto* dst = static_cast<std::string*>(to);
    for (int64_t i = 0; i < count; ++i) dst[i] = src[i];
  } else if (dtype == DataType::kResource) {
    const auto* src = static_cast<const ResourceHandle*>(from);
    auto* dst = static_cast<ResourceHandle*>(to);
    for (int64_t i = 0; i < count; ++i) dst[i] = src[i];
  } else {
    std::memcpy(to, from, count * DataTypeSize(dtype));
  }
}

size_t ElementBytes(DataType dtype) {
  if (dtype == DataType::kString) return sizeof(std::string);
  if (dtype == DataType::kResource) return sizeof(ResourceHandle);
  return DataTypeSize(dtype);
}

// A batch of the given rows of every source tensor.
Element GatherRows(const std::vector<Tensor>& source,
                   const std::vector<int64_t>& rows) {
  Element batch;
  batch.reserve(source.size());
  const int64_t n = static_cast<int64_t>(rows.size());
  for (const Tensor& src : source) {
    TensorShape shape({n});
    for (int i = 1; i < src.dims(); ++i) shape.AddDim(src.dim_size(i));
    Tensor out =
        src.dtype() == DataType::kString || src.dtype() == DataType::kResource
            ? Tensor(src.dtype(), shape)
            : Tensor::Uninitialized(src.dtype(), shape);
    const int64_t row_elements = shape.num_elements() / (n == 0 ? 1 : n);
    const size_t row_bytes = row_elements * ElementBytes(src.dtype());
    const char* from = static_cast<const char*>(src.raw_data());
    char* to = static_cast<char*>(out.raw_data());
    for (int64_t j = 0; j < n; ++j) {
      CopyElements(src.dtype(), from + rows[j] * row_bytes, to + j * row_bytes,
                   row_elements);
    }
    batch.push_back(std::move(out));
  }
  return batch;
}

// A batch of `elements`, which must agree in dtype and shape per component.
absl::StatusOr<Element> StackElements(const std::vector<Element>& elements) {
  const Element& first = elements[0];
  for (size_t j = 1; j < elements.size(); ++j) {
    if (elements[j].size() != first.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Batch: element ", j, " of the batch has ", elements[j].size(),
          " components but element 0 has ", first.size()));
    }
    for (size_t c = 0; c < first.size(); ++c) {
      const Tensor& t = elements[j][c];
      if (t.dtype() != first[c].dtype() || t.shape() != first[c].shape()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "Batch: component ", c, " is ", t.TypeString(), " in element ", j,
            " of the batch but ", first[c].TypeString(),
            " in element 0; elements must agree in dtype and shape to be "
            "stacked"));
      }
    }
  }
  const int64_t n = static_cast<int64_t>(elements.size());
  Element batch;
  batch.reserve(first.size());
  for (size_t c = 0; c < first.size(); ++c) {
    const DataType dtype = first[c].dtype();
    if (!DataTypeIsValid(dtype)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Batch: component ", c, " of element 0 is an uninitialized tensor"));
    }
    const TensorShape shape = BatchShape(n, first[c].shape());
    Tensor out = ElementBytes(dtype) == DataTypeSize(dtype)
                     ? Tensor::Uninitialized(dtype, shape)
                     : Tensor(dtype, shape);
    const int64_t count = first[c].NumElements();
    char* to = static_cast<char*>(out.raw_data());
    for (int64_t j = 0; j < n; ++j) {
      CopyElements(dtype, elements[j][c].raw_data(),
                   to + j * count * ElementBytes(dtype), count);
    }
    batch.push_back(std::move(out));
  }
  return batch;
}

// A batch size is not a promise of that many elements (Batch(1 << 40) is
// legal), so reserve no more than this up front.
constexpr int64_t kMaxReserve = 1 << 16;

class BatchIterator : public IteratorImpl {
 public:
  BatchIterator(const std::vector<Tensor>* rows,
                std::unique_ptr<IteratorImpl> input, int64_t batch_size,
                bool drop_remainder)
      : rows_(rows),
        input_(std::move(input)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder) {}

  absl::Status GetNext(Element* out, bool* end) override {
    return rows_ != nullptr ? NextFromRows(out, end)
                            : NextFromElements(out, end);
  }

 private:
  bool Short(size_t n) const {
    return n == 0 || (drop_remainder_ && static_cast<int64_t>(n) < batch_size_);
  }

  absl::Status NextFromRows(Element* out, bool* end) {
    std::vector<int64_t> rows;
    rows.reserve(std::min<int64_t>(batch_size_, kMaxReserve));
    while (static_cast<int64_t>(rows.size()) < batch_size_) {
      int64_t row = 0;
      bool input_end = false;
      DF_RETURN_IF_ERROR(input_->GetNextRow(&row, &input_end));
      if (input_end) break;
      rows.push_back(row);
    }
    if (Short(rows.size())) {
      *end = true;
      return absl::OkStatus();
    }
    *out = GatherRows(*rows_, rows);
    return absl::OkStatus();
  }

  absl::Status NextFromElements(Element* out, bool* end) {
    std::vector<Element> elements;
    while (static_cast<int64_t>(elements.size()) < batch_size_) {
      Element element;
      bool input_end = false;
      DF_RETURN_IF_ERROR(input_->GetNext(&element, &input_end));
      if (input_end) break;
      elements.push_back(std::move(element));
    }
    if (Short(elements.size())) {
      *end = true;
      return absl::OkStatus();
    }
    DF_ASSIGN_OR_RETURN(*out, StackElements(elements));
    return absl::OkStatus();
  }

  const std::vector<Tensor>* rows_;  // the row source in row mode, else null
  std::unique_ptr<IteratorImpl> input_;
  int64_t batch_size_;
  bool drop_remainder_;
};

class BatchNode : public DatasetNode {
 public:
  BatchNode(NodePtr input, int64_t batch_size, bool drop_remainder)
      : input_(std::move(input)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder) {}

  std::unique_ptr<IteratorImpl> MakeIterator(
      const IteratorContext& ctx) const override {
    return std::make_unique<BatchIterator>(input_->RowSource(),
                                           input_->MakeIterator(ctx),
                                           batch_size_, drop_remainder_);
  }
  int64_t Cardinality() const override {
    const int64_t n = input_->Cardinality();
    if (n < 0) return n;
    return drop_remainder_ ? n / batch_size_
                           : (n + batch_size_ - 1) / batch_size_;
  }

 private:
  NodePtr input_;
  int64_t batch_size_;
  bool drop_remainder_;
};

}  // namespace

NodePtr NewBatchNode(NodePtr input, int64_t batch_size, bool drop_remainder) {
  return std::make_shared<BatchNode>(std::move(input), batch_size,
                                     drop_remainder);
}

}  // namespace internal
}  // namespace data
}  // namespace distflow
