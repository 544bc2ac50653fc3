// Shard, Take and Repeat: transformations that choose which input elements
// come out, in input order. Each works on row indices or on elements alike.
#include <algorithm>
#include <utility>

#include "data/dataset_node.h"

namespace distflow {
namespace data {
namespace internal {
namespace {

// Passes elements index, index + n, index + 2n, ... of the input.
template <typename Item>
class ShardIterator : public ItemIterator<Item> {
 public:
  ShardIterator(const std::vector<Tensor>* rows,
                std::unique_ptr<IteratorImpl> input, int64_t num_shards,
                int64_t index)
      : ItemIterator<Item>(rows),
        input_(std::move(input)),
        num_shards_(num_shards),
        to_skip_(index) {}

  absl::Status Next(Item* item, bool* end) override {
    for (; to_skip_ > 0; --to_skip_) {
      Item skipped{};
      DF_RETURN_IF_ERROR(Pull(input_.get(), &skipped, end));
      if (*end) return absl::OkStatus();
    }
    DF_RETURN_IF_ERROR(Pull(input_.get(), item, end));
    to_skip_ = num_shards_ - 1;
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<IteratorImpl> input_;
  int64_t num_shards_;
  int64_t to_skip_;  // input elements to drop before the next one we keep
};

template <typename Item>
class TakeIterator : public ItemIterator<Item> {
 public:
  TakeIterator(const std::vector<Tensor>* rows,
               std::unique_ptr<IteratorImpl> input, int64_t count)
      : ItemIterator<Item>(rows), input_(std::move(input)), left_(count) {}

  absl::Status Next(Item* item, bool* end) override {
    if (left_ <= 0) {
      *end = true;
      return absl::OkStatus();
    }
    DF_RETURN_IF_ERROR(Pull(input_.get(), item, end));
    if (!*end) --left_;
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<IteratorImpl> input_;
  int64_t left_;
};

// Makes a fresh input iterator for every pass, each with its own epoch key so
// that a Shuffle upstream reorders every pass differently.
template <typename Item>
class RepeatIterator : public ItemIterator<Item> {
 public:
  RepeatIterator(const std::vector<Tensor>* rows, NodePtr input,
                 IteratorContext ctx, int64_t count)
      : ItemIterator<Item>(rows),
        input_(std::move(input)),
        ctx_(ctx),
        count_(count) {}

  absl::Status Next(Item* item, bool* end) override {
    while (true) {
      if (count_ >= 0 && pass_ >= count_) {
        *end = true;
        return absl::OkStatus();
      }
      if (current_ == nullptr) {
        current_ = input_->MakeIterator(
            IteratorContext{MixKeys(ctx_.epoch_key, pass_)});
        pass_has_elements_ = false;
      }
      bool pass_end = false;
      DF_RETURN_IF_ERROR(Pull(current_.get(), item, &pass_end));
      if (!pass_end) {
        pass_has_elements_ = true;
        return absl::OkStatus();
      }
      current_.reset();
      ++pass_;
      // An empty pass would make Repeat() spin forever without an element.
      if (!pass_has_elements_) {
        *end = true;
        return absl::OkStatus();
      }
    }
  }

 private:
  NodePtr input_;
  IteratorContext ctx_;
  int64_t count_;  // -1: forever
  int64_t pass_ = 0;
  bool pass_has_elements_ = false;
  std::unique_ptr<IteratorImpl> current_;
};

class ShardNode : public SelectionNode {
 public:
  ShardNode(NodePtr input, int64_t num_shards, int64_t index)
      : SelectionNode(std::move(input)),
        num_shards_(num_shards),
        index_(index) {}
  std::unique_ptr<IteratorImpl> MakeIterator(
      const IteratorContext& ctx) const override {
    return MakeItemIterator<ShardIterator>(*input(), input()->MakeIterator(ctx),
                                           num_shards_, index_);
  }
  int64_t Cardinality() const override {
    const int64_t n = input()->Cardinality();
    if (n < 0) return n;
    return n > index_ ? (n - index_ + num_shards_ - 1) / num_shards_ : 0;
  }

 private:
  int64_t num_shards_;
  int64_t index_;
};

class TakeNode : public SelectionNode {
 public:
  TakeNode(NodePtr input, int64_t count)
      : SelectionNode(std::move(input)), count_(count) {}
  std::unique_ptr<IteratorImpl> MakeIterator(
      const IteratorContext& ctx) const override {
    return MakeItemIterator<TakeIterator>(*input(), input()->MakeIterator(ctx),
                                          count_);
  }
  int64_t Cardinality() const override {
    const int64_t n = input()->Cardinality();
    if (n == kInfiniteCardinality) return count_;
    if (n == kUnknownCardinality) return n;
    return std::min(n, count_);
  }

 private:
  int64_t count_;
};

class RepeatNode : public SelectionNode {
 public:
  RepeatNode(NodePtr input, int64_t count)
      : SelectionNode(std::move(input)), count_(count) {}
  std::unique_ptr<IteratorImpl> MakeIterator(
      const IteratorContext& ctx) const override {
    return MakeItemIterator<RepeatIterator>(*input(), input(), ctx, count_);
  }
  int64_t Cardinality() const override {
    const int64_t n = input()->Cardinality();
    if (n <= 0) return n;  // empty, infinite or unknown stays so
    return count_ < 0 ? kInfiniteCardinality : n * count_;
  }

 private:
  int64_t count_;
};

}  // namespace

NodePtr NewShardNode(NodePtr input, int64_t num_shards, int64_t index) {
  return std::make_shared<ShardNode>(std::move(input), num_shards, index);
}
NodePtr NewTakeNode(NodePtr input, int64_t count) {
  return std::make_shared<TakeNode>(std::move(input), count);
}
NodePtr NewRepeatNode(NodePtr input, int64_t count) {
  return std::make_shared<RepeatNode>(std::move(input), count);
}

}  // namespace internal
}  // namespace data
}  // namespace distflow
