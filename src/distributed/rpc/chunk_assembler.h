// Reassembly of tensors that arrive in pieces (PushTensor chunks, RunStep
// stream pieces), hardened against senders that lie: every piece of a tensor
// must describe the same tensor as its first, lie within it, and cover bytes
// no earlier piece covered; a tensor is whole only once every byte has come.
// Partial tensors count against a PushBudget and are dropped when they wait
// too long, so a sender that never finishes holds nothing for long.
#ifndef DISTFLOW_DISTRIBUTED_RPC_CHUNK_ASSEMBLER_H_
#define DISTFLOW_DISTRIBUTED_RPC_CHUNK_ASSEMBLER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "distflow/tensor.h"
#include "distributed/push_budget.h"

namespace distflow {

// The byte ranges of one tensor received so far.
class ReceivedRanges {
 public:
  // Adds [offset, offset + length) (length > 0); false, adding nothing, if it
  // overlaps a range added before.
  bool Add(int64_t offset, int64_t length);
  // Bytes covered.
  int64_t bytes() const { return bytes_; }

 private:
  std::map<int64_t, int64_t> ranges_;  // begin -> end; disjoint, not adjacent
  int64_t bytes_ = 0;
};

// One piece of a pushed tensor, as its header describes it.
struct PushChunk {
  int64_t step_id = 0;
  std::string key;
  DataType dtype = DataType::kInvalid;
  TensorShape shape;
  int64_t total_bytes = 0;
  int64_t offset = 0;
  int64_t length = 0;
};

// Thread-safe.
class ChunkAssembler {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  using Allocator =
      std::function<absl::StatusOr<Tensor>(DataType, const TensorShape&)>;
  // Each partial tensor counts its bytes and this much bookkeeping.
  static constexpr int64_t kPartialOverheadBytes = 1024;

  struct Options {
    // Where buffers come from (default: Tensor::Create, uninitialized).
    Allocator allocate;
    // Not owned, may be null (no limit); outlives the assembler.
    PushBudget* budget = nullptr;
    // How long a partial tensor may wait for its last piece.
    absl::Duration timeout = absl::Minutes(5);
    // Default: std::chrono::steady_clock::now.
    Clock clock;
  };
  explicit ChunkAssembler(Options options);
  ~ChunkAssembler();

  // Takes `chunk` from `peer`: `copy` writes its `length` bytes to the
  // pointer it is given (outside the lock). Returns the tensor once its last
  // byte has come, an uninitialized tensor before. INVALID_ARGUMENT naming the
  // step, key and peer for a piece that does not fit the tensor or repeats
  // bytes; RESOURCE_EXHAUSTED naming the peer past its budget.
  absl::StatusOr<Tensor> Add(const PushChunk& chunk, const std::string& peer,
                             absl::FunctionRef<void(char*)> copy);
  // Forgets the partial tensors of `step_id` (the step was aborted).
  void DropStep(int64_t step_id);
  // Drops the partial tensors older than the timeout (Add does it too, now
  // and then).
  void ExpireOld();
  int NumPartial();

 private:
  struct Partial {
    uint64_t id = 0;  // tells a partial from one made after it was dropped
    Tensor value;
    DataType dtype = DataType::kInvalid;
    TensorShape shape;
    int64_t total = 0;
    ReceivedRanges ranges;
    int64_t copied = 0;
    int64_t charged = 0;
    std::chrono::steady_clock::time_point started;
  };
  using Key = std::tuple<int64_t, std::string, std::string>;  // step,key,peer

  void ExpireLocked(std::chrono::steady_clock::time_point now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EraseLocked(absl::flat_hash_map<Key, Partial>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  absl::Mutex mu_;
  absl::flat_hash_map<Key, Partial> partial_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::chrono::steady_clock::time_point next_sweep_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_CHUNK_ASSEMBLER_H_
