// Shuffle: tf.data's buffered shuffle. The buffer holds row indices in row
// mode, so shuffling never touches the tensors.
#include <random>
#include <utility>
#include <vector>

#include "data/dataset_node.h"

namespace distflow {
namespace data {
namespace internal {
namespace {

// mt19937_64's output is fixed by the standard, and the reduction to a range
// is ours (unlike std::uniform_int_distribution's), so the order is the same
// with every standard library.
class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}
  // Uniform in [0, n), n >= 1 (Lemire's multiply-and-reject: no modulo bias).
  uint64_t UniformBelow(uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(engine_()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = -n % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(engine_()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

 private:
  std::mt19937_64 engine_;
};

template <typename Item>
class ShuffleIterator : public ItemIterator<Item> {
 public:
  ShuffleIterator(const std::vector<Tensor>* rows,
                  std::unique_ptr<IteratorImpl> input, int64_t buffer_size,
                  uint64_t seed)
      : ItemIterator<Item>(rows),
        input_(std::move(input)),
        buffer_size_(buffer_size),
        random_(seed) {}

  absl::Status Next(Item* item, bool* end) override {
    while (!input_done_ &&
           static_cast<int64_t>(buffer_.size()) < buffer_size_) {
      Item next{};
      bool input_end = false;
      DF_RETURN_IF_ERROR(Pull(input_.get(), &next, &input_end));
      if (input_end) {
        input_done_ = true;
      } else {
        buffer_.push_back(std::move(next));
      }
    }
    if (buffer_.empty()) {
      *end = true;
      return absl::OkStatus();
    }
    const size_t pick = random_.UniformBelow(buffer_.size());
    *item = std::move(buffer_[pick]);
    if (pick + 1 != buffer_.size()) buffer_[pick] = std::move(buffer_.back());
    buffer_.pop_back();
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<IteratorImpl> input_;
  int64_t buffer_size_;
  Random random_;
  std::vector<Item> buffer_;
  bool input_done_ = false;
};

class ShuffleNode : public SelectionNode {
 public:
  ShuffleNode(NodePtr input, int64_t buffer_size, uint64_t seed)
      : SelectionNode(std::move(input)),
        buffer_size_(buffer_size),
        seed_(seed) {}

  std::unique_ptr<IteratorImpl> MakeIterator(
      const IteratorContext& ctx) const override {
    return MakeItemIterator<ShuffleIterator>(
        *input(), input()->MakeIterator(ctx), buffer_size_,
        MixKeys(seed_, ctx.epoch_key));
  }
  int64_t Cardinality() const override { return input()->Cardinality(); }

 private:
  int64_t buffer_size_;
  uint64_t seed_;
};

}  // namespace

NodePtr NewShuffleNode(NodePtr input, int64_t buffer_size, uint64_t seed) {
  return std::make_shared<ShuffleNode>(std::move(input), buffer_size, seed);
}

}  // namespace internal
}  // namespace data
}  // namespace distflow
