// Dataset and Iterator: argument checks and the epoch bookkeeping; the
// transformations themselves live in the *_dataset.cc files.
#include <utility>

#include "absl/strings/str_cat.h"
#include "data/dataset_node.h"
#include "distflow/data.h"

namespace distflow {
namespace data {
namespace internal {

uint64_t MixKeys(uint64_t a, uint64_t b) {
  uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace internal

namespace {

absl::Status CheckComponents(const std::vector<Tensor>& components) {
  if (components.empty()) {
    return absl::InvalidArgumentError(
        "FromTensors: expected at least one tensor, got none");
  }
  for (size_t c = 0; c < components.size(); ++c) {
    const Tensor& t = components[c];
    if (!DataTypeIsValid(t.dtype())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FromTensors: component ", c, " is an uninitialized tensor"));
    }
    if (t.dims() < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("FromTensors: component ", c, " is a scalar (",
                       t.TypeString(), "); expected rank >= 1 to slice rows"));
    }
    if (t.dim_size(0) != components[0].dim_size(0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FromTensors: component ", c, " has ", t.dim_size(0), " rows (",
          t.TypeString(), ") but component 0 has ", components[0].dim_size(0),
          " (", components[0].TypeString(),
          "); every component must have the same size in dimension 0"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckAtLeast(const char* method, const char* arg, int64_t value,
                          int64_t minimum) {
  if (value >= minimum) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      method, ": ", arg, " is ", value, "; expected at least ", minimum));
}

}  // namespace

Iterator::Iterator(std::shared_ptr<const internal::DatasetNode> node,
                   std::unique_ptr<internal::IteratorImpl> impl)
    : node_(std::move(node)), impl_(std::move(impl)) {}

Iterator::~Iterator() = default;

absl::StatusOr<std::optional<Element>> Iterator::GetNext() {
  if (!error_.ok()) return error_;
  if (done_) return std::nullopt;
  Element element;
  bool end = false;
  absl::Status status = impl_->GetNext(&element, &end);
  if (!status.ok()) {
    error_ = status;
    return status;
  }
  if (end) {
    done_ = true;
    return std::nullopt;
  }
  return std::optional<Element>(std::move(element));
}

Dataset::Dataset(std::shared_ptr<const internal::DatasetNode> node,
                 absl::Status status)
    : node_(std::move(node)),
      status_(std::move(status)),
      iterators_made_(std::make_shared<std::atomic<int64_t>>(0)) {}

Dataset::Dataset()
    : Dataset(nullptr,
              absl::FailedPreconditionError(
                  "Dataset: default-constructed; make one with FromTensors")) {}

Dataset Dataset::FromTensors(std::vector<Tensor> components) {
  absl::Status status = CheckComponents(components);
  if (!status.ok()) return Dataset(nullptr, std::move(status));
  return Dataset(internal::NewTensorSliceNode(std::move(components)),
                 absl::OkStatus());
}

Dataset Dataset::Derive(
    absl::Status arg_status,
    const std::function<internal::NodePtr(internal::NodePtr)>& make) const {
  if (!status_.ok()) return Dataset(nullptr, status_);
  if (!arg_status.ok()) return Dataset(nullptr, std::move(arg_status));
  return Dataset(make(node_), absl::OkStatus());
}

Dataset Dataset::Shuffle(int64_t buffer_size, uint64_t seed) const {
  return Derive(CheckAtLeast("Shuffle", "buffer_size", buffer_size, 1),
                [&](internal::NodePtr input) {
                  return internal::NewShuffleNode(std::move(input), buffer_size,
                                                  seed);
                });
}

Dataset Dataset::Repeat(int64_t count) const {
  return Derive(CheckAtLeast("Repeat", "count", count, -1),
                [&](internal::NodePtr input) {
                  return internal::NewRepeatNode(std::move(input), count);
                });
}

Dataset Dataset::Batch(int64_t batch_size, bool drop_remainder) const {
  return Derive(CheckAtLeast("Batch", "batch_size", batch_size, 1),
                [&](internal::NodePtr input) {
                  return internal::NewBatchNode(std::move(input), batch_size,
                                                drop_remainder);
                });
}

Dataset Dataset::Shard(int64_t num_shards, int64_t index) const {
  absl::Status status = CheckAtLeast("Shard", "num_shards", num_shards, 1);
  if (status.ok() && (index < 0 || index >= num_shards)) {
    status = absl::InvalidArgumentError(absl::StrCat(
        "Shard: index ", index, " is out of range for ", num_shards,
        " shards; expected 0 <= index < ", num_shards));
  }
  return Derive(std::move(status), [&](internal::NodePtr input) {
    return internal::NewShardNode(std::move(input), num_shards, index);
  });
}

Dataset Dataset::Take(int64_t count) const {
  return Derive(CheckAtLeast("Take", "count", count, 0),
                [&](internal::NodePtr input) {
                  return internal::NewTakeNode(std::move(input), count);
                });
}

Dataset Dataset::Map(MapFn fn) const {
  absl::Status status =
      fn ? absl::OkStatus()
         : absl::InvalidArgumentError("Map: the function is empty");
  return Derive(std::move(status), [&](internal::NodePtr input) {
    return internal::NewMapNode(std::move(input), std::move(fn));
  });
}

Dataset Dataset::Prefetch(int64_t buffer_size) const {
  return Derive(CheckAtLeast("Prefetch", "buffer_size", buffer_size, 1),
                [&](internal::NodePtr input) {
                  return internal::NewPrefetchNode(std::move(input),
                                                   buffer_size);
                });
}

int64_t Dataset::Cardinality() const {
  return status_.ok() ? node_->Cardinality() : kUnknownCardinality;
}

absl::StatusOr<std::unique_ptr<Iterator>> Dataset::MakeIterator() const {
  if (!status_.ok()) return status_;
  const int64_t epoch = iterators_made_->fetch_add(1);
  internal::IteratorContext ctx{static_cast<uint64_t>(epoch)};
  return std::make_unique<Iterator>(node_, node_->MakeIterator(ctx));
}

}  // namespace data
}  // namespace distflow
