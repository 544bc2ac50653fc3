// FromTensors: the rows of a set of tensors, the source of row mode.
#include <utility>

#include "data/dataset_node.h"

namespace distflow {
namespace data {
namespace internal {

Element SliceRow(const std::vector<Tensor>& source, int64_t row) {
  Element element;
  element.reserve(source.size());
  for (const Tensor& t : source) {
    std::vector<int64_t> dims(t.shape().dim_sizes().begin() + 1,
                              t.shape().dim_sizes().end());
    // The sizes come from a valid shape, so neither call can fail.
    absl::StatusOr<TensorShape> shape = TensorShape::FromDims(dims);
    DF_CHECK(shape.ok()) << shape.status();
    absl::StatusOr<Tensor> view = t.Slice(row, row + 1).Reshape(*shape);
    DF_CHECK(view.ok()) << view.status();
    element.push_back(*std::move(view));
  }
  return element;
}

namespace {

class TensorSliceIterator : public ItemIterator<int64_t> {
 public:
  TensorSliceIterator(const std::vector<Tensor>* rows, int64_t num_rows)
      : ItemIterator<int64_t>(rows), num_rows_(num_rows) {}

  absl::Status Next(int64_t* row, bool* end) override {
    if (next_ >= num_rows_) {
      *end = true;
    } else {
      *row = next_++;
    }
    return absl::OkStatus();
  }

 private:
  int64_t num_rows_;
  int64_t next_ = 0;
};

class TensorSliceNode : public DatasetNode {
 public:
  explicit TensorSliceNode(std::vector<Tensor> components)
      : components_(std::move(components)) {}

  std::unique_ptr<IteratorImpl> MakeIterator(
      const IteratorContext& ctx) const override {
    return std::make_unique<TensorSliceIterator>(&components_,
                                                 components_[0].dim_size(0));
  }
  const std::vector<Tensor>* RowSource() const override { return &components_; }
  int64_t Cardinality() const override { return components_[0].dim_size(0); }

 private:
  std::vector<Tensor> components_;
};

}  // namespace

NodePtr NewTensorSliceNode(std::vector<Tensor> components) {
  DF_CHECK(!components.empty());
  return std::make_shared<TensorSliceNode>(std::move(components));
}

}  // namespace internal
}  // namespace data
}  // namespace distflow
