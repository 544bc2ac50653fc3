#include "distributed/rpc/grpc_master_stream_service.h"

#include <atomic>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/cancellation.h"
#include "distributed/rpc/callback_tag.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/tensor_stream.h"
#include "proto/master.grpc.pb.h"

namespace distflow {
namespace {

using Service = proto::MasterStreamService::WithRawMethod_RunStep<
    proto::MasterStreamService::WithRawMethod_RunStepOneMessage<
        proto::MasterStreamService::Service>>;
using BidiStream =
    grpc::ServerAsyncReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>;
using WriteStream = grpc::ServerAsyncWriter<grpc::ByteBuffer>;

// What every call of the service shares (outlives its calls).
struct StreamEnv {
  Service* service;
  Master* master;
  ThreadPool* pool;
  grpc::ServerCompletionQueue* cq;
};

// One call of either method, on the task's completion queue: waits for the
// call, decodes the request message by message, runs the step on the pool
// once every feed is complete, then writes the fetches one message at a time
// (gRPC allows one operation of each kind in flight), the last one together
// with the status. Its operations follow one another, so the call is a tag
// of its own with one state. `Stream` is gRPC's bidirectional or
// server-streaming writer; the two have the same write calls. A call that
// ends before its step (the client went away, cancelled it or passed its
// deadline) cancels the step, which is then aborted on every task: left to
// run, a step blocked in a dequeue would take an item that nobody receives.
template <typename Stream>
class StepCall : public CqTag {
 public:
  void OnEvent(bool ok) override {
    switch (state_) {
      case State::kAwaiting:
        if (!ok) {    // the server is shutting down; no call came
          Release();  // gRPC sends no done event for a call never started
          return;
        }
        pending_ = 2;  // the finish and the done events
        AwaitNext();
        OnCallStarted();
        return;
      case State::kReading:
        OnRead(ok);
        return;
      case State::kWriting:
        outgoing_[next_write_ - 1].Clear();  // let go of the tensor's bytes
        if (!ok) {
          // The client went away; its context reports the cancellation.
          FinishWith(grpc::Status(grpc::StatusCode::CANCELLED,
                                  "RunStep stream: the client went away"));
          return;
        }
        WriteNext();
        return;
      case State::kFinishing:
        Unref();
        return;
    }
  }

 protected:
  enum class State { kAwaiting, kReading, kWriting, kFinishing };

  StepCall(const StreamEnv* env, CompletionQueueThreads* threads)
      : CqTag(threads), env_(env), stream_(&ctx_), done_tag_(this, threads) {}

  // Asks for the event that says the call has ended; before the call is
  // requested, as gRPC requires.
  void WatchForEnd() { ctx_.AsyncNotifyWhenDone(&done_tag_); }

  // Asks the server for the next call of this method.
  virtual void AwaitNext() = 0;
  // The call has come: start taking its request.
  virtual void OnCallStarted() = 0;
  // A read (of the bidirectional method) completed.
  virtual void OnRead(bool /*ok*/) {}

  // Whether `this` may start operations; releases it if not.
  bool TrackOrRelease() {
    if (Track()) return true;
    Release();  // the server is stopping
    return false;
  }

  // Decodes one message of the request; true once every feed is complete.
  absl::StatusOr<bool> Decode(const grpc::ByteBuffer& message) {
    // The last line of defence: a decoder that throws fails the call.
    try {
      return DecodeOrThrow(message);
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat(
          "RunStep stream: decoding a message failed: ", e.what()));
    }
  }
  absl::StatusOr<bool> DecodeOrThrow(const grpc::ByteBuffer& message) {
    proto::RunStepStreamHeader header;
    auto framed = ParseFramedMessage(message, &header, "RunStep stream");
    if (!framed.ok()) return framed.status();
    if (!step_.has_value()) {
      if (!header.has_step()) {
        return absl::InvalidArgumentError(
            "RunStep stream: the first message holds no step");
      }
      step_ = std::move(*header.mutable_step());
      feeds_.emplace("feed",
                     std::vector<std::string>(step_->feed_name().begin(),
                                              step_->feed_name().end()));
    }
    absl::Status s = feeds_->AddPieces(header, *framed);
    if (!s.ok()) return s;
    return feeds_->Complete();
  }

  // The request has ended before every feed was complete.
  absl::Status Incomplete() {
    return step_.has_value() ? feeds_->Finish().status()
                             : absl::InvalidArgumentError(
                                   "RunStep stream: the client sent no step");
  }

  // Runs the step once `complete` (Decode's answer) says the request is
  // whole; ends the call with its error otherwise.
  void RunIfComplete(const absl::StatusOr<bool>& complete) {
    if (!complete.ok()) {
      FinishWith(ToGrpcStatus(complete.status()));
    } else if (!*complete) {
      FinishWith(ToGrpcStatus(Incomplete()));
    } else {
      // Steps block for their whole length: never on a polling thread.
      env_->pool->Schedule([this] { RunStep(); });
    }
  }

  void FinishWith(const grpc::Status& status) {
    state_ = State::kFinishing;
    stream_.Finish(status, this);
  }

  const StreamEnv* const env_;
  State state_ = State::kAwaiting;
  grpc::ServerContext ctx_;
  Stream stream_;

 private:
  void RunStep() {
    absl::StatusOr<std::vector<Tensor>> outputs;
    // The last line of defence: a step that throws fails the call, and
    // neither the process nor the pool's thread ends.
    try {
      outputs = RunStepOrThrow();
    } catch (const std::exception& e) {
      outputs = absl::InternalError(
          absl::StrCat("RunStep failed on the master: ", e.what()));
    }
    if (!outputs.ok()) {
      FinishWith(ToGrpcStatus(outputs.status()));
      return;
    }
    // At least one message, even without fetches.
    outgoing_ = EncodeTensorStream(proto::RunStepStreamHeader(), *outputs);
    WriteNext();
  }

  absl::StatusOr<std::vector<Tensor>> RunStepOrThrow() {
    absl::StatusOr<std::vector<Tensor>> outputs = feeds_->Finish();
    if (outputs.ok()) {
      std::vector<std::pair<std::string, Tensor>> feeds;
      for (int i = 0; i < step_->feed_name_size(); ++i) {
        feeds.emplace_back(step_->feed_name(i), std::move((*outputs)[i]));
      }
      feeds_.reset();  // the feeds are ours alone now: freed with the step
      outputs = env_->master->RunStep(
          step_->session_handle(), feeds,
          std::vector<std::string>(step_->fetch().begin(),
                                   step_->fetch().end()),
          std::vector<std::string>(step_->target().begin(),
                                   step_->target().end()),
          &cancel_);
    }
    return outputs;
  }

  void WriteNext() {
    grpc::ByteBuffer* message = &outgoing_[next_write_++];
    if (next_write_ == outgoing_.size()) {
      state_ = State::kFinishing;
      stream_.WriteAndFinish(*message, grpc::WriteOptions(), grpc::Status::OK,
                             this);
    } else {
      state_ = State::kWriting;
      stream_.Write(*message, this);
    }
  }

  friend class CallEndTag<StepCall>;

  void OnEnded() {
    if (ctx_.IsCancelled()) cancel_.StartCancel();
    Unref();
  }

  // The call is released once both its finish and its done events are in.
  void Unref() {
    if (pending_.fetch_sub(1) == 1) Release();
  }

  std::optional<proto::RunStepRequest> step_;
  std::optional<TensorStreamDecoder> feeds_;
  std::vector<grpc::ByteBuffer> outgoing_;
  size_t next_write_ = 0;
  CancellationManager cancel_;
  CallEndTag<StepCall> done_tag_;
  std::atomic<int> pending_{0};
};

// RunStep: reads the request's messages until every feed is complete
// (without waiting for the client's end of stream, a wake-up less).
class StreamedRequestCall : public StepCall<BidiStream> {
 public:
  static void Await(const StreamEnv* env, CompletionQueueThreads* threads) {
    auto* call = new StreamedRequestCall(env, threads);
    if (!call->TrackOrRelease()) return;
    call->WatchForEnd();
    env->service->RequestRunStep(&call->ctx_, &call->stream_, env->cq, env->cq,
                                 call);
  }

 private:
  using StepCall::StepCall;

  void AwaitNext() override { Await(env_, threads()); }
  void OnCallStarted() override {
    state_ = State::kReading;
    stream_.Read(&incoming_, this);
  }
  void OnRead(bool ok) override {
    if (!ok) {  // the stream ended (or the client went away) too early
      FinishWith(ToGrpcStatus(Incomplete()));
      return;
    }
    absl::StatusOr<bool> complete = Decode(incoming_);
    incoming_.Clear();
    if (complete.ok() && !*complete) {
      stream_.Read(&incoming_, this);
      return;
    }
    RunIfComplete(complete);
  }

  grpc::ByteBuffer incoming_;
};

// RunStepOneMessage: the whole request comes with the call.
class OneMessageCall : public StepCall<WriteStream> {
 public:
  static void Await(const StreamEnv* env, CompletionQueueThreads* threads) {
    auto* call = new OneMessageCall(env, threads);
    if (!call->TrackOrRelease()) return;
    call->WatchForEnd();
    env->service->RequestRunStepOneMessage(
        &call->ctx_, &call->request_, &call->stream_, env->cq, env->cq, call);
  }

 private:
  using StepCall::StepCall;

  void AwaitNext() override { Await(env_, threads()); }
  void OnCallStarted() override {
    absl::StatusOr<bool> complete = Decode(request_);
    request_.Clear();
    RunIfComplete(complete);
  }

  grpc::ByteBuffer request_;
};

class GrpcMasterStreamService : public AsyncService {
 public:
  GrpcMasterStreamService(Master* master, ThreadPool* pool)
      : env_{&service_, master, pool, nullptr} {}

  grpc::Service* service() override { return &service_; }

  void Start(grpc::ServerCompletionQueue* cq,
             CompletionQueueThreads* threads) override {
    env_.cq = cq;
    StreamedRequestCall::Await(&env_, threads);
    OneMessageCall::Await(&env_, threads);
  }

 private:
  Service service_;
  StreamEnv env_;
};

}  // namespace

std::unique_ptr<AsyncService> NewGrpcMasterStreamService(Master* master,
                                                         ThreadPool* pool) {
  return std::make_unique<GrpcMasterStreamService>(master, pool);
}

}  // namespace distflow
