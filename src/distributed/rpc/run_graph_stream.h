// RunGraph calls from a master to a task as messages on one stream that
// stays open between steps (call_stream.h). A step's RunGraph to a task is
// small (the graph's handle and the step id, and feeds only when the client
// feeds that task), and a training loop sends one every step, so the master
// sends those without feeds this way. A call past its deadline tells the
// task, which aborts the step.
#ifndef DISTFLOW_DISTRIBUTED_RPC_RUN_GRAPH_STREAM_H_
#define DISTFLOW_DISTRIBUTED_RPC_RUN_GRAPH_STREAM_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "distributed/rpc/call_stream.h"
#include "proto/worker.grpc.pb.h"

namespace distflow {

// Whether RunGraph calls go on a stream (true unless the environment sets
// DISTFLOW_RUN_GRAPH_STREAM=0, for measuring against unary calls).
bool UseRunGraphStream();

// RunGraph's messages on WorkerService.RunGraphStream (call_stream.h).
struct RunGraphCalls {
  using Request = proto::RunGraphRequest;
  using Response = proto::RunGraphResponse;
  using CallMessage = proto::RunGraphStreamRequest;
  using AnswerMessage = proto::RunGraphStreamResponse;
  static constexpr char kMethod[] = "RunGraph";

  static CallMessage Call(uint64_t id, const Request& request);
  static std::optional<CallMessage> Cancel(uint64_t id);
  static bool ParseAnswer(AnswerMessage* message,
                          StreamAnswer<Response>* answer);
  static bool ParseCall(CallMessage* message, StreamCall<Request>* call);
  static AnswerMessage Answer(uint64_t id, const absl::Status& status,
                              Response* response);
};

using RunGraphStreamClient = CallStreamClient<RunGraphCalls>;
using RunGraphStreamMethod = CallStreamMethod<RunGraphCalls>;

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_RUN_GRAPH_STREAM_H_
