// The PushTensor message: a protobuf header followed by the tensor's raw
// bytes, built as a gRPC byte buffer whose data slice points into the
// tensor's refcounted buffer (no protobuf copy of the bytes). See
// docs/formats.md.
//
//   [uint32 little-endian n][n bytes: PushTensorHeader][raw element bytes]
//
// A tensor of more than `chunk_bytes` goes as several messages, each holding
// the bytes [offset, offset + length) of the tensor; the receiver assembles
// them (PushAssembler).
#ifndef DISTFLOW_DISTRIBUTED_RPC_TENSOR_WIRE_H_
#define DISTFLOW_DISTRIBUTED_RPC_TENSOR_WIRE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "distflow/tensor.h"
#include "distributed/rpc/recv_buffer_pool.h"
#include "grpcpp/grpcpp.h"
#include "proto/worker.pb.h"

namespace distflow {

// Bytes per PushTensor message: far below gRPC's 2 GiB message limit; gRPC
// moves a stream of messages of a few MiB faster than one huge message.
inline constexpr int64_t kDefaultPushChunkBytes = int64_t{4} << 20;

// The messages that carry `value` under `key` in step `step_id`, in order.
// Each buffer holds a reference to the tensor's buffer until gRPC releases
// it.
std::vector<grpc::ByteBuffer> EncodePushTensor(
    int64_t step_id, const std::string& key, const Tensor& value,
    int64_t chunk_bytes = kDefaultPushChunkBytes);

// Reassembles pushed tensors. Thread-safe.
class PushAssembler {
 public:
  // Receive buffers of large tensors are reused from `pool` (see
  // recv_buffer_pool.h); without one every tensor gets a fresh buffer.
  explicit PushAssembler(std::shared_ptr<RecvBufferPool> pool = nullptr)
      : pool_(std::move(pool)) {}

  struct Complete {
    int64_t step_id = 0;
    std::string key;
    Tensor value;
  };
  // Decodes one message. Returns the finished tensor once its last bytes
  // have arrived, nullopt-like (value uninitialized) before that.
  // INVALID_ARGUMENT naming the key for a malformed message.
  absl::StatusOr<Complete> Add(const grpc::ByteBuffer& message);
  // Forgets partial tensors of `step_id` (the step was aborted).
  void DropStep(int64_t step_id);

 private:
  struct Partial {
    Tensor value;
    int64_t received = 0;
  };
  Tensor NewTensor(DataType dtype, const TensorShape& shape);

  const std::shared_ptr<RecvBufferPool> pool_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::pair<int64_t, std::string>, Partial> partial_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_TENSOR_WIRE_H_
