// PushTensor calls from one task to another as messages on one stream that
// stays open between steps (call_stream.h). A training step pushes a few
// tensors each way between a worker and each ps task, every step; a push
// that fits one message (a same-host offer, or a tensor of at most one
// chunk) goes this way, and a larger one as unary calls, one per chunk, which
// gRPC interleaves on the connection.
//
// On the wire each call is a PushTensor message (tensor_wire.h) whose header
// has `call_id` set, and each answer a PushTensorStreamResponse; both are
// custom-coded (raw byte buffers), so the tensor's bytes are not copied.
#ifndef DISTFLOW_DISTRIBUTED_RPC_PUSH_STREAM_H_
#define DISTFLOW_DISTRIBUTED_RPC_PUSH_STREAM_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "distributed/rpc/call_stream.h"
#include "grpcpp/grpcpp.h"
#include "proto/worker.pb.h"

namespace distflow {

// Whether pushes go on a stream (true unless the environment sets
// DISTFLOW_PUSH_STREAM=0, for measuring against unary calls).
bool UsePushStream();

// PushTensor's messages on WorkerService.PushTensorStream (call_stream.h).
struct PushCalls {
  using Request = grpc::ByteBuffer;  // a PushTensor message
  using Response = proto::PushTensorResponse;
  using CallMessage = grpc::ByteBuffer;
  using AnswerMessage = grpc::ByteBuffer;
  static constexpr char kMethod[] = "PushTensor";

  // The request with `id` in its header (the tensor's bytes are shared).
  static CallMessage Call(uint64_t id, const Request& request);
  // A push does nothing on the task that outlives it: nothing to cancel.
  static std::optional<CallMessage> Cancel(uint64_t) { return std::nullopt; }
  static bool ParseAnswer(AnswerMessage* message,
                          StreamAnswer<Response>* answer);
  static bool ParseCall(CallMessage* message, StreamCall<Request>* call);
  static AnswerMessage Answer(uint64_t id, const absl::Status& status,
                              Response* response);
};

using PushStreamClient = CallStreamClient<PushCalls>;
using PushStreamMethod = CallStreamMethod<PushCalls>;

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_PUSH_STREAM_H_
