#include "distributed/rpc/push_stream.h"

#include <string>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/tensor_wire.h"

namespace distflow {

bool UsePushStream() {
  static const bool use = EnabledByEnv("DISTFLOW_PUSH_STREAM");
  return use;
}

PushCalls::CallMessage PushCalls::Call(uint64_t id, const Request& request) {
  proto::PushTensorHeader header;
  absl::StatusOr<FramedMessage> framed =
      ParseFramedMessage(request, &header, kMethod);
  // The request comes from this process's own encoder (tensor_wire.h).
  DF_CHECK(framed.ok()) << framed.status();
  header.set_call_id(id);
  std::vector<grpc::Slice> slices = {FramedHeaderSlice(header)};
  size_t skip = framed->data_start;
  for (const grpc::Slice& slice : framed->slices) {
    if (skip >= slice.size()) {
      skip -= slice.size();
      continue;
    }
    slices.push_back(skip == 0 ? slice : slice.sub(skip, slice.size()));
    skip = 0;
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

bool PushCalls::ParseAnswer(AnswerMessage* message,
                            StreamAnswer<Response>* answer) {
  proto::PushTensorStreamResponse parsed;
  if (!ProtoFromByteBuffer(*message, &parsed)) return false;
  answer->id = parsed.call_id();
  answer->status =
      parsed.code() == 0
          ? grpc::Status::OK
          : grpc::Status(static_cast<grpc::StatusCode>(parsed.code()),
                         parsed.message());
  answer->response.Swap(parsed.mutable_response());
  return true;
}

bool PushCalls::ParseCall(CallMessage* message, StreamCall<Request>* call) {
  proto::PushTensorHeader header;
  if (!ParseFramedMessage(*message, &header, kMethod).ok()) return false;
  call->id = header.call_id();
  call->request = std::move(*message);
  return true;
}

PushCalls::AnswerMessage PushCalls::Answer(uint64_t id,
                                           const absl::Status& status,
                                           Response* response) {
  proto::PushTensorStreamResponse message;
  message.set_call_id(id);
  message.set_code(static_cast<int>(status.code()));
  message.set_message(std::string(status.message()));
  message.mutable_response()->Swap(response);
  return ProtoToByteBuffer(message);
}

}  // namespace distflow
