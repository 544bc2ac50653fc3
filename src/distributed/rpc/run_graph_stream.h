// RunGraph calls from one task to another as messages on one gRPC stream that
// stays open between steps.
//
// A unary call opens an HTTP/2 stream of its own: headers out and back,
// trailers, and gRPC's setup of a call on both sides. For a small message
// that is most of the cost: an echo between two processes of this machine
// took 65-73 us a unary call against 35-37 us a message each way on an open
// stream (docs/benchmarks.md, "RunGraph on a stream"). A step's RunGraph to a
// task is small (the graph's handle and the step id, and feeds only when the
// client feeds that task), and a training loop sends one every step, so the
// master sends those without feeds on one stream per task. Each request
// carries an id that its answer carries back; requests may overlap, and
// answers come as their steps end.
//
// Failures keep the unary call's meaning: a stream that breaks (the task
// died, or its connection did) fails every call still waiting with the
// transport's status, naming the task and its address; a call past its
// deadline fails with DEADLINE_EXCEEDED and tells the task, which aborts the
// step; on the serving side, a stream that breaks with steps still running
// aborts them, as a cancelled unary RunGraph does.
#ifndef DISTFLOW_DISTRIBUTED_RPC_RUN_GRAPH_STREAM_H_
#define DISTFLOW_DISTRIBUTED_RPC_RUN_GRAPH_STREAM_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "distributed/rpc/completion_queue_threads.h"
#include "grpcpp/alarm.h"
#include "grpcpp/grpcpp.h"
#include "proto/worker.grpc.pb.h"

namespace distflow {

// Whether RunGraph calls go on a stream (true unless the environment sets
// DISTFLOW_RUN_GRAPH_STREAM=0, for measuring against unary calls).
bool UseRunGraphStream();

// The calling side: one stream to one task, on `threads`' queue.
class RunGraphStreamClient
    : public std::enable_shared_from_this<RunGraphStreamClient> {
 public:
  using Done = std::function<void(const absl::Status&)>;

  // A stream on `stub`'s channel (the stub outlives the stream), opened by
  // its first call.
  static std::shared_ptr<RunGraphStreamClient> Open(
      proto::WorkerService::Stub* stub, CompletionQueueThreads* threads,
      std::string task, std::string address);

  // Sends `request` (copied). `done` gets the call's status, with the answer
  // in `*response`, on a polling thread. Returns false, without calling
  // `done`, if the stream has failed (open another) or this task's RPC layer
  // is shutting down; the first call of a stream is always taken otherwise.
  bool Call(const proto::RunGraphRequest& request,
            proto::RunGraphResponse* response, absl::Duration timeout,
            Done done);

  // Ends the stream: calls still waiting fail with CANCELLED. Returns once
  // the stream is over and every `done` has returned.
  void Close();

  RunGraphStreamClient(proto::WorkerService::Stub* stub,
                       CompletionQueueThreads* threads, std::string task,
                       std::string address);

 private:
  struct Pending {
    proto::RunGraphResponse* response;
    Done done;
    absl::Time deadline;
  };

  // Starts the stream; false if this task's RPC layer is shutting down.
  bool Start() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnStarted(bool ok);
  void OnWritten(bool ok);
  void OnRead(bool ok);
  void OnAlarm(bool ok);
  void OnFinished();
  // Each starts one operation, under mu_; false if the queue is closing.
  bool StartRead() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool StartWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ArmAlarm(absl::Time at) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks the stream failed and cancels it; its read then fails and the
  // stream finishes.
  void Fail() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks the stream failed after it broke by itself (Finish tells why).
  void Ended() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the stream once nothing is outstanding.
  void MaybeFinish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `n` calls' `done` have returned.
  void CallbacksDone(int n);
  // Says the stream is over once it has finished and no `done` runs.
  void MaybeOver() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CallStatus(const grpc::Status& s) const;

  proto::WorkerService::Stub* const stub_;
  CompletionQueueThreads* const threads_;
  const std::string task_;
  const std::string address_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientAsyncReaderWriter<proto::RunGraphStreamRequest,
                                                proto::RunGraphStreamResponse>>
      stream_;
  grpc::Alarm alarm_;
  grpc::Status finish_status_;
  absl::Notification over_;

  absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool alarm_armed_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  // `done` callbacks taken out of pending_ that have not returned yet.
  int callbacks_running_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time alarm_at_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::deque<proto::RunGraphStreamRequest> to_write_ ABSL_GUARDED_BY(mu_);
  proto::RunGraphStreamResponse incoming_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);
};

// The serving side: handles RunGraph messages of every stream that callers
// open to this task.
struct RunGraphStreamMethod {
  // Asks the server for the next stream (the generated
  // RequestRunGraphStream).
  std::function<void(
      grpc::ServerContext*,
      grpc::ServerAsyncReaderWriter<proto::RunGraphStreamResponse,
                                    proto::RunGraphStreamRequest>*,
      grpc::ServerCompletionQueue*, void* tag)>
      request;
  // Runs one call, as the unary RunGraph's handler: calls `done` exactly
  // once, from any thread; `request` and `response` live until then.
  std::function<void(const proto::RunGraphRequest* request,
                     proto::RunGraphResponse* response,
                     std::function<void(const absl::Status&)> done)>
      handle;
  // Called for each call still running when its stream breaks (the caller
  // went away) or its caller gives up on it (its deadline passed), as for a
  // cancelled unary RunGraph.
  std::function<void(const proto::RunGraphRequest& request)> on_cancel;
};

// Starts waiting for streams of `method` (which outlives the queue).
void AwaitRunGraphStreams(const RunGraphStreamMethod* method,
                          grpc::ServerCompletionQueue* cq,
                          CompletionQueueThreads* threads);

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_RUN_GRAPH_STREAM_H_
