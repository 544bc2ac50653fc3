// Reusable receive buffers for pushed tensors. A fresh multi-MiB buffer costs
// a page fault per 4 KiB page on its first write, which halves the speed of
// the copy out of gRPC's slices; a buffer that was written before costs none.
// Buffers of 1 MiB or more sit on huge pages (base/aligned_memory.h): a
// same-host read into them is somewhat faster, and one out of them (a
// received tensor that becomes a variable's value is read by the next pull)
// about twice as fast.
//
// A pooled buffer goes back to the pool only when the last Tensor viewing it
// is destroyed (it is a TensorBuffer held by shared_ptr), so a buffer is never
// handed out while a user still holds a tensor over it.
#ifndef DISTFLOW_DISTRIBUTED_RPC_RECV_BUFFER_POOL_H_
#define DISTFLOW_DISTRIBUTED_RPC_RECV_BUFFER_POOL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "distflow/tensor.h"

namespace distflow {

class RecvBufferPool : public std::enable_shared_from_this<RecvBufferPool> {
 public:
  // Tensors smaller than this are allocated normally.
  static constexpr size_t kMinPooledBytes = size_t{64} << 10;

  // Keeps at most `max_free_bytes` of idle buffers.
  static std::shared_ptr<RecvBufferPool> Create(size_t max_free_bytes);
  ~RecvBufferPool();

  // An uninitialized tensor of a fixed-size `dtype`, over a reused buffer
  // when one of the same size is idle. RESOURCE_EXHAUSTED naming the size
  // when memory runs out. Thread-safe.
  absl::StatusOr<Tensor> Allocate(DataType dtype, const TensorShape& shape);

  // Idle bytes held (for tests).
  size_t free_bytes() const;

 private:
  class Buffer;
  explicit RecvBufferPool(size_t max_free_bytes)
      : max_free_bytes_(max_free_bytes) {}
  // Takes back the memory of a buffer no tensor views any more.
  void Release(void* data, size_t capacity);

  const size_t max_free_bytes_;
  mutable absl::Mutex mu_;
  struct Idle {
    void* data;
    size_t capacity;
  };
  std::vector<Idle> idle_ ABSL_GUARDED_BY(mu_);
  size_t free_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_RECV_BUFFER_POOL_H_
