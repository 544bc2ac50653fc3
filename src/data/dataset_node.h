// The internals behind data::Dataset: a dataset is a chain of immutable nodes,
// and each node makes iterators that pull from its input's iterators.
//
// Row mode. Elements of FromTensors are rows of its source tensors, and Shard,
// Shuffle, Take and Repeat only select and reorder elements. Over such a chain
// (a node whose RowSource() is not null) iterators pass row indices instead of
// tensors: Shuffle buffers int64 indices, and Batch copies each chosen row from
// the source tensor with one memcpy instead of stacking per-row tensors.
#ifndef DISTFLOW_DATA_DATASET_NODE_H_
#define DISTFLOW_DATA_DATASET_NODE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "distflow/data.h"
#include "distflow/tensor.h"

namespace distflow {
namespace data {
namespace internal {

// What an iterator knows about the pass it serves.
struct IteratorContext {
  // Distinguishes passes over a dataset (the iterator number, then each pass
  // of a Repeat); Shuffle derives its random order from it and its seed.
  uint64_t epoch_key = 0;
};

// A hash of two keys (splitmix64 finalizer): well mixed, and the same on every
// platform.
uint64_t MixKeys(uint64_t a, uint64_t b);

class IteratorImpl {
 public:
  virtual ~IteratorImpl() = default;
  // The next element into *out, or *end = true (and *out untouched) at the end.
  virtual absl::Status GetNext(Element* out, bool* end) = 0;
  // Row mode only: the index of the next element in its node's RowSource().
  virtual absl::Status GetNextRow(int64_t* row, bool* end) {
    DF_CHECK(false) << "GetNextRow on an iterator that is not in row mode";
    return absl::InternalError("unreachable");
  }
};

class DatasetNode {
 public:
  virtual ~DatasetNode() = default;
  virtual std::unique_ptr<IteratorImpl> MakeIterator(
      const IteratorContext& ctx) const = 0;
  // Non-null if every element is a row of these tensors; then the iterators
  // implement GetNextRow. Lives as long as the node.
  virtual const std::vector<Tensor>* RowSource() const { return nullptr; }
  // The number of elements, kInfiniteCardinality or kUnknownCardinality.
  virtual int64_t Cardinality() const = 0;
};

using NodePtr = std::shared_ptr<const DatasetNode>;

// A node whose elements are its input's, chosen, repeated or reordered
// (shard, take, repeat, shuffle): in row mode it passes its input's rows on.
class SelectionNode : public DatasetNode {
 public:
  explicit SelectionNode(NodePtr input) : input_(std::move(input)) {}
  const std::vector<Tensor>* RowSource() const override {
    return input_->RowSource();
  }

 protected:
  const NodePtr& input() const { return input_; }

 private:
  NodePtr input_;
};

// Element `row` of FromTensors(source): one view per component, no copy.
Element SliceRow(const std::vector<Tensor>& source, int64_t row);

// Pulls the next item from `it`: a row index in row mode, else an element.
inline absl::Status Pull(IteratorImpl* it, int64_t* row, bool* end) {
  return it->GetNextRow(row, end);
}
inline absl::Status Pull(IteratorImpl* it, Element* element, bool* end) {
  return it->GetNext(element, end);
}

// Base of the iterators that work the same on row indices (Item = int64_t)
// and on elements (Item = Element): subclasses implement Next().
template <typename Item>
class ItemIterator : public IteratorImpl {
 public:
  // `rows` is the node's RowSource() in row mode, else null.
  explicit ItemIterator(const std::vector<Tensor>* rows) : rows_(rows) {
    constexpr bool kRowMode = std::is_same_v<Item, int64_t>;
    DF_CHECK((rows != nullptr) == kRowMode);
  }
  virtual absl::Status Next(Item* item, bool* end) = 0;

  absl::Status GetNext(Element* out, bool* end) final {
    if constexpr (std::is_same_v<Item, int64_t>) {
      int64_t row = 0;
      DF_RETURN_IF_ERROR(Next(&row, end));
      if (!*end) *out = SliceRow(*rows_, row);
      return absl::OkStatus();
    } else {
      return Next(out, end);
    }
  }
  absl::Status GetNextRow(int64_t* row, bool* end) final {
    if constexpr (std::is_same_v<Item, int64_t>) {
      return Next(row, end);
    } else {
      return IteratorImpl::GetNextRow(row, end);
    }
  }

 private:
  const std::vector<Tensor>* rows_;
};

// Makes Iter<int64_t> if `input` is in row mode, else Iter<Element>; `args`
// go to the constructor after the row source.
template <template <typename> class Iter, typename... Args>
std::unique_ptr<IteratorImpl> MakeItemIterator(const DatasetNode& input,
                                               Args&&... args) {
  if (const std::vector<Tensor>* rows = input.RowSource()) {
    return std::make_unique<Iter<int64_t>>(rows, std::forward<Args>(args)...);
  }
  return std::make_unique<Iter<Element>>(nullptr, std::forward<Args>(args)...);
}

// Node factories. Arguments are validated by Dataset before these are called.
NodePtr NewTensorSliceNode(std::vector<Tensor> components);
NodePtr NewShardNode(NodePtr input, int64_t num_shards, int64_t index);
NodePtr NewTakeNode(NodePtr input, int64_t count);
NodePtr NewRepeatNode(NodePtr input, int64_t count);
NodePtr NewShuffleNode(NodePtr input, int64_t buffer_size, uint64_t seed);
NodePtr NewBatchNode(NodePtr input, int64_t batch_size, bool drop_remainder);
NodePtr NewMapNode(NodePtr input, Dataset::MapFn fn);
NodePtr NewPrefetchNode(NodePtr input, int64_t buffer_size);

}  // namespace internal
}  // namespace data
}  // namespace distflow

#endif  // DISTFLOW_DATA_DATASET_NODE_H_
