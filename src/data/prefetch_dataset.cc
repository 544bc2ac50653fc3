// Prefetch: a background thread runs the input iterator and keeps a bounded
// queue of ready elements.
#include <deque>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "data/dataset_node.h"

namespace distflow {
namespace data {
namespace internal {
namespace {

class PrefetchIterator : public IteratorImpl {
 public:
  PrefetchIterator(std::unique_ptr<IteratorImpl> input, int64_t capacity)
      : input_(std::move(input)), capacity_(capacity) {
    // Started last, when every member it touches exists.
    thread_ = std::thread([this] { Produce(); });
  }

  // Stops the producer at its next check (after the element it is computing,
  // if any) and joins it, so no thread outlives the iterator.
  ~PrefetchIterator() override {
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
    }
    thread_.join();
  }

  absl::Status GetNext(Element* out, bool* end) override {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &PrefetchIterator::ReadyToConsume));
    if (!queue_.empty()) {
      *out = std::move(queue_.front());
      queue_.pop_front();
      return absl::OkStatus();
    }
    // The producer has finished and everything it made has been taken.
    if (!final_status_.ok()) return final_status_;
    *end = true;
    return absl::OkStatus();
  }

 private:
  bool ReadyToConsume() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || finished_;
  }
  bool ReadyToProduce() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return static_cast<int64_t>(queue_.size()) < capacity_ || cancelled_;
  }

  void Produce() {
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(this, &PrefetchIterator::ReadyToProduce));
        if (cancelled_) return;
      }
      // input_ is touched by this thread only, and outside the lock so that
      // the consumer can take elements meanwhile.
      Element element;
      bool end = false;
      absl::Status status = input_->GetNext(&element, &end);
      absl::MutexLock lock(&mu_);
      if (!status.ok() || end) {
        final_status_ = std::move(status);
        finished_ = true;
        return;
      }
      queue_.push_back(std::move(element));
    }
  }

  std::unique_ptr<IteratorImpl> input_;
  const int64_t capacity_;
  absl::Mutex mu_;
  std::deque<Element> queue_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;  // the producer has returned
  absl::Status final_status_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

class PrefetchNode : public DatasetNode {
 public:
  PrefetchNode(NodePtr input, int64_t buffer_size)
      : input_(std::move(input)), buffer_size_(buffer_size) {}
  std::unique_ptr<IteratorImpl> MakeIterator(
      const IteratorContext& ctx) const override {
    return std::make_unique<PrefetchIterator>(input_->MakeIterator(ctx),
                                              buffer_size_);
  }
  int64_t Cardinality() const override { return input_->Cardinality(); }

 private:
  NodePtr input_;
  int64_t buffer_size_;
};

}  // namespace

NodePtr NewPrefetchNode(NodePtr input, int64_t buffer_size) {
  return std::make_shared<PrefetchNode>(std::move(input), buffer_size);
}

}  // namespace internal
}  // namespace data
}  // namespace distflow
