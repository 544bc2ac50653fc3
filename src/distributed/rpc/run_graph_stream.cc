#include "distributed/rpc/run_graph_stream.h"

#include <string>

#include "distributed/rpc/grpc_util.h"

namespace distflow {

bool UseRunGraphStream() {
  static const bool use = EnabledByEnv("DISTFLOW_RUN_GRAPH_STREAM");
  return use;
}

RunGraphCalls::CallMessage RunGraphCalls::Call(uint64_t id,
                                               const Request& request) {
  CallMessage message;
  message.set_id(id);
  *message.mutable_request() = request;
  return message;
}

std::optional<RunGraphCalls::CallMessage> RunGraphCalls::Cancel(uint64_t id) {
  // The task aborts the step, as the end of a unary call's deadline would
  // make it do.
  CallMessage message;
  message.set_id(id);
  message.set_cancel(true);
  return message;
}

bool RunGraphCalls::ParseAnswer(AnswerMessage* message,
                                StreamAnswer<Response>* answer) {
  answer->id = message->id();
  answer->status =
      message->code() == 0
          ? grpc::Status::OK
          : grpc::Status(static_cast<grpc::StatusCode>(message->code()),
                         message->message());
  answer->response.Swap(message->mutable_response());
  return true;
}

bool RunGraphCalls::ParseCall(CallMessage* message, StreamCall<Request>* call) {
  call->id = message->id();
  call->cancel = message->cancel();
  call->request.Swap(message->mutable_request());
  return true;
}

RunGraphCalls::AnswerMessage RunGraphCalls::Answer(uint64_t id,
                                                   const absl::Status& status,
                                                   Response* response) {
  AnswerMessage message;
  message.set_id(id);
  message.set_code(static_cast<int>(status.code()));
  message.set_message(std::string(status.message()));
  message.mutable_response()->Swap(response);
  return message;
}

}  // namespace distflow
