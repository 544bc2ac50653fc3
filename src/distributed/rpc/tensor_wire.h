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
//
// On one host a large tensor can go as one header-only message instead, whose
// `same_host` field says where the bytes lie in the sender; the receiver
// copies them out of the sender's memory (same_host.h).
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
#include "absl/time/time.h"
#include "base/thread_pool.h"
#include "distflow/tensor.h"
#include "distributed/push_budget.h"
#include "distributed/rpc/chunk_assembler.h"
#include "distributed/rpc/recv_buffer_pool.h"
#include "grpcpp/grpcpp.h"
#include "proto/worker.pb.h"

namespace distflow {

// Bytes per PushTensor message: far below gRPC's 2 GiB message limit; gRPC
// moves a stream of messages of a few MiB faster than one huge message.
inline constexpr int64_t kDefaultPushChunkBytes = int64_t{4} << 20;

// The framing of every custom-coded message (PushTensor, the master's
// stream, data connections): [uint32 little-endian n][n bytes: a protobuf
// header][raw bytes]. The first two parts, as bytes and as a slice.
std::string FramedHeader(const google::protobuf::MessageLite& header);
grpc::Slice FramedHeaderSlice(const google::protobuf::MessageLite& header);

// The header of a push of `value` (total_bytes set for fixed-size types).
proto::PushTensorHeader PushHeaderFor(int64_t step_id, const std::string& key,
                                      const Tensor& value);

// The tensor that a push header of a fixed-size type describes, when
// `data_len` bytes at its offset fit it; INVALID_ARGUMENT naming the tensor's
// key otherwise, RESOURCE_EXHAUSTED when the tensor is larger than any may be
// (TensorByteSize).
struct PushedTensorSpec {
  DataType dtype;
  TensorShape shape;
};
absl::StatusOr<PushedTensorSpec> CheckPushHeader(
    const proto::PushTensorHeader& header, int64_t data_len);

// A custom-coded message taken apart: its slices, and where the raw bytes
// after the header start.
struct FramedMessage {
  std::vector<grpc::Slice> slices;
  size_t data_start = 0;
  size_t size = 0;
};
// Parses the header of `message` into `header`; INVALID_ARGUMENT naming
// `method` for a message too short or a malformed header.
absl::StatusOr<FramedMessage> ParseFramedMessage(
    const grpc::ByteBuffer& message, google::protobuf::MessageLite* header,
    const char* method);

// A protobuf message as a byte buffer (a custom-coded method's answer), and
// back; false if `buffer` does not hold one.
grpc::ByteBuffer ProtoToByteBuffer(
    const google::protobuf::MessageLite& message);
bool ProtoFromByteBuffer(const grpc::ByteBuffer& buffer,
                         google::protobuf::MessageLite* message);

// Copies `n` bytes starting `skip` bytes into the concatenation of `slices`.
void CopyFromSlices(const std::vector<grpc::Slice>& slices, size_t skip,
                    size_t n, char* out);

// The messages that carry `value` under `key` in step `step_id`, in order.
// Each buffer holds a reference to the tensor's buffer until gRPC releases
// it.
std::vector<grpc::ByteBuffer> EncodePushTensor(
    int64_t step_id, const std::string& key, const Tensor& value,
    int64_t chunk_bytes = kDefaultPushChunkBytes);

// An offer of a tensor by the same-host path: the header that says where its
// bytes lie in this process, and what the sender keeps alive until the
// PushTensor call ends (the tensor, which must stay unchanged, and copies).
struct SameHostOffer {
  proto::PushTensorHeader header;
  std::shared_ptr<const void> keepalive;
};
// The offer of `value`. Where some of its parts (a packed transfer's) lie in
// this process's tensor arena and others are small heap buffers, the small
// ones are copied together into one arena buffer, so that the receiver maps
// every part: reading the small ones out of this process instead cost the
// receiver a system call of 10-13 µs, against about 1 µs per part mapped.
SameHostOffer OfferSameHost(int64_t step_id, const std::string& key,
                            const Tensor& value);
// The one message that carries `offer`.
grpc::ByteBuffer EncodeSameHostPush(const SameHostOffer& offer);

// Reassembles pushed tensors. Thread-safe.
class PushAssembler {
 public:
  // How long a tensor that came in part waits for its other chunks.
  static constexpr absl::Duration kDefaultPartialTimeout = absl::Minutes(5);

  // Receive buffers of large tensors are reused from `pool` (see
  // recv_buffer_pool.h); without one every tensor gets a fresh buffer.
  // Same-host pushes are read only if `same_host_reads` is set; threads of
  // `read_helpers` (not owned, may be null) help read large ones. Tensors
  // that came in part count against `budget` (not owned, may be null: no
  // limit) and are dropped after `partial_timeout`.
  explicit PushAssembler(
      std::shared_ptr<RecvBufferPool> pool = nullptr,
      bool same_host_reads = true, ThreadPool* read_helpers = nullptr,
      PushBudget* budget = nullptr,
      absl::Duration partial_timeout = kDefaultPartialTimeout);

  struct Complete {
    int64_t step_id = 0;
    std::string key;
    Tensor value;
    // Why a same-host push could not be read (value uninitialized): the
    // sender should push the bytes instead.
    std::string same_host_refused;
    // Whether the bytes were read by the same-host path.
    bool same_host = false;
  };
  // Decodes one message from `peer` (as gRPC names it, for errors and the
  // budget). Returns the finished tensor once its last bytes have arrived,
  // nullopt-like (value uninitialized) before that. INVALID_ARGUMENT naming
  // the key (and for a chunk the step and peer) for a malformed message;
  // RESOURCE_EXHAUSTED naming the peer past its budget.
  absl::StatusOr<Complete> Add(const grpc::ByteBuffer& message,
                               const std::string& peer = std::string());
  // A same-host offer whose header is already parsed (a data connection's
  // frame): as Add, without framing the header into a message again.
  absl::StatusOr<Complete> AddOffer(const proto::PushTensorHeader& header);
  // Forgets partial tensors of `step_id` (the step was aborted).
  void DropStep(int64_t step_id);
  // Tensors that have come in part (for tests).
  int NumPartial() { return chunks_.NumPartial(); }

 private:
  absl::StatusOr<Tensor> NewTensor(DataType dtype, const TensorShape& shape);
  // Copies a same-host push's bytes out of the sender.
  absl::Status ReadFromSender(const proto::PushTensorHeader& header,
                              DataType dtype, const TensorShape& shape,
                              Complete* out);

  const std::shared_ptr<RecvBufferPool> pool_;
  const bool same_host_reads_;
  ThreadPool* const read_helpers_;
  ChunkAssembler chunks_;
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_TENSOR_WIRE_H_
