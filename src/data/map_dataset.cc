// Map: applies a user function to every element.
#include <utility>

#include "absl/strings/str_cat.h"
#include "data/dataset_node.h"

namespace distflow {
namespace data {
namespace internal {
namespace {

class MapIterator : public IteratorImpl {
 public:
  MapIterator(std::unique_ptr<IteratorImpl> input, const Dataset::MapFn* fn)
      : input_(std::move(input)), fn_(fn) {}

  absl::Status GetNext(Element* out, bool* end) override {
    Element element;
    DF_RETURN_IF_ERROR(input_->GetNext(&element, end));
    if (*end) return absl::OkStatus();
    absl::StatusOr<Element> mapped = (*fn_)(std::move(element));
    if (!mapped.ok()) {
      return AddErrorContext(
          mapped.status(),
          absl::StrCat("Map: the function failed on element ", position_));
    }
    ++position_;
    *out = *std::move(mapped);
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<IteratorImpl> input_;
  const Dataset::MapFn* fn_;  // owned by the node, which outlives iterators
  int64_t position_ = 0;
};

class MapNode : public DatasetNode {
 public:
  MapNode(NodePtr input, Dataset::MapFn fn)
      : input_(std::move(input)), fn_(std::move(fn)) {}
  std::unique_ptr<IteratorImpl> MakeIterator(
      const IteratorContext& ctx) const override {
    return std::make_unique<MapIterator>(input_->MakeIterator(ctx), &fn_);
  }
  int64_t Cardinality() const override { return input_->Cardinality(); }

 private:
  NodePtr input_;
  Dataset::MapFn fn_;
};

}  // namespace

NodePtr NewMapNode(NodePtr input, Dataset::MapFn fn) {
  return std::make_shared<MapNode>(std::move(input), std::move(fn));
}

}  // namespace internal
}  // namespace data
}  // namespace distflow
