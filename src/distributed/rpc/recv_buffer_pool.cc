#include "distributed/rpc/recv_buffer_pool.h"

#include <cstdlib>
#include <new>

#include "absl/strings/str_cat.h"
#include "base/aligned_memory.h"

namespace distflow {
namespace {
constexpr size_t kAlignment = 64;
}  // namespace

class RecvBufferPool::Buffer : public TensorBuffer {
 public:
  Buffer(std::shared_ptr<RecvBufferPool> pool, void* data, size_t size,
         size_t capacity)
      : pool_(std::move(pool)), data_(data), size_(size), capacity_(capacity) {}
  ~Buffer() override { pool_->Release(data_, capacity_); }
  void* data() const override { return data_; }
  size_t size() const override { return size_; }

 private:
  const std::shared_ptr<RecvBufferPool> pool_;
  void* const data_;
  const size_t size_;
  const size_t capacity_;
};

std::shared_ptr<RecvBufferPool> RecvBufferPool::Create(size_t max_free_bytes) {
  return std::shared_ptr<RecvBufferPool>(new RecvBufferPool(max_free_bytes));
}

absl::StatusOr<Tensor> RecvBufferPool::Allocate(DataType dtype,
                                                const TensorShape& shape) {
  // (The size comes from a peer's header: checked before anything is made.)
  absl::StatusOr<size_t> checked = TensorByteSize(dtype, shape);
  if (!checked.ok()) return checked.status();
  const size_t size = *checked;
  if (size < kMinPooledBytes || DataTypeSize(dtype) == 0) {
    return Tensor::Create(dtype, shape, /*zero=*/false);
  }
  const size_t capacity = (size + kAlignment - 1) / kAlignment * kAlignment;
  void* data = nullptr;
  {
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < idle_.size(); ++i) {
      if (idle_[i].capacity == capacity) {
        data = idle_[i].data;
        free_bytes_ -= capacity;
        idle_.erase(idle_.begin() + i);
        break;
      }
    }
  }
  if (data == nullptr) {
    data = AllocateAligned(capacity, kAlignment);
    if (data == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot allocate ", capacity, " bytes to receive a ",
                       DataTypeName(dtype), shape.DebugString(),
                       " tensor: this task is out of memory"));
    }
  }
  return Tensor(
      dtype, shape,
      std::make_shared<Buffer>(shared_from_this(), data, size, capacity));
}

RecvBufferPool::~RecvBufferPool() {
  absl::MutexLock lock(&mu_);
  for (const Idle& idle : idle_) FreeAligned(idle.data, idle.capacity);
}

void RecvBufferPool::Release(void* data, size_t capacity) {
  if (capacity > max_free_bytes_) {
    FreeAligned(data, capacity);
    return;
  }
  std::vector<Idle> evicted;
  {
    absl::MutexLock lock(&mu_);
    // The oldest idle buffers make room for the newest.
    size_t drop = 0;
    while (free_bytes_ + capacity > max_free_bytes_) {
      free_bytes_ -= idle_[drop].capacity;
      evicted.push_back(idle_[drop]);
      ++drop;
    }
    idle_.erase(idle_.begin(), idle_.begin() + drop);
    idle_.push_back({data, capacity});
    free_bytes_ += capacity;
  }
  for (const Idle& idle : evicted) FreeAligned(idle.data, idle.capacity);
}

size_t RecvBufferPool::free_bytes() const {
  absl::MutexLock lock(&mu_);
  return free_bytes_;
}

}  // namespace distflow
