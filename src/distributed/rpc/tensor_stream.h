// Tensors of any size as a stream of custom-coded messages: the coding of
// MasterStreamService.RunStep (docs/formats.md), feeds one way and fetches
// the other.
//
// Each message is [uint32 n][RunStepStreamHeader][raw bytes]; the header
// lists pieces, each a byte range of one tensor, whose bytes follow in
// order. Small tensors share a message; a large one spans several, so a
// tensor past gRPC's 2 GiB message limit travels. The raw bytes are gRPC
// slices that point into the tensors' refcounted buffers (no copy on the
// sending side); the receiver copies each piece once, from gRPC's slices
// into the tensor's aligned buffer.
#ifndef DISTFLOW_DISTRIBUTED_RPC_TENSOR_STREAM_H_
#define DISTFLOW_DISTRIBUTED_RPC_TENSOR_STREAM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "distflow/tensor.h"
#include "distributed/rpc/chunk_assembler.h"
#include "distributed/rpc/recv_buffer_pool.h"
#include "distributed/rpc/tensor_wire.h"
#include "grpcpp/grpcpp.h"
#include "proto/master.pb.h"

namespace distflow {

// The messages that carry `tensors` (piece indexes are positions in it),
// the first of them with `first`'s fields too (such as the step). At least
// one message, each holding about `message_bytes` of tensor bytes at most.
// The messages keep references to the tensors' buffers until gRPC releases
// them.
std::vector<grpc::ByteBuffer> EncodeTensorStream(
    const proto::RunStepStreamHeader& first, const std::vector<Tensor>& tensors,
    int64_t message_bytes = kDefaultPushChunkBytes);

// Reassembles the tensors of one stream. Not thread-safe (one call's
// messages arrive in order, one at a time).
class TensorStreamDecoder {
 public:
  // Expects one tensor per name; `kind` and the names ("feed 'x:0'") say
  // which tensor is at fault in errors. The tensors together may hold at most
  // `max_bytes` (RESOURCE_EXHAUSTED past it, before anything is allocated).
  TensorStreamDecoder(
      std::string kind, std::vector<std::string> names,
      int64_t max_bytes = static_cast<int64_t>(kMaxTensorBytes));

  // Decodes one message. Its header is parsed into `header`. INVALID_ARGUMENT
  // naming the tensor for a malformed piece (outside the tensor or the
  // message, or repeating bytes), RESOURCE_EXHAUSTED when a tensor is too
  // large or its buffer cannot be allocated.
  absl::Status Add(const grpc::ByteBuffer& message,
                   proto::RunStepStreamHeader* header);
  // Takes the pieces of a message parsed already (with ParseFramedMessage).
  absl::Status AddPieces(const proto::RunStepStreamHeader& header,
                         const FramedMessage& message);
  // Whether a message has come and every tensor has all its bytes: the
  // stream's last message has arrived (the side that reads it need not wait
  // for the end of the stream).
  bool Complete() const;
  // The tensors, once every one has all its bytes; INVALID_ARGUMENT naming
  // the first that is missing or incomplete.
  absl::StatusOr<std::vector<Tensor>> Finish();

 private:
  std::string Name(int index) const;
  bool TensorComplete(int index) const;

  const std::string kind_;
  const std::vector<std::string> names_;
  const int64_t max_bytes_;
  int64_t allocated_bytes_ = 0;
  // Large buffers come from here: an allocation failure is an error, not an
  // exception. It keeps no idle buffers.
  const std::shared_ptr<RecvBufferPool> allocator_;
  std::vector<Tensor> tensors_;
  std::vector<ReceivedRanges> ranges_;
  bool any_message_ = false;
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_TENSOR_STREAM_H_
