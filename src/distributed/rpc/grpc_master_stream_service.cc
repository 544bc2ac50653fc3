#include "distributed/rpc/grpc_master_stream_service.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/tensor_stream.h"
#include "proto/master.grpc.pb.h"

namespace distflow {
namespace {

using Base = proto::MasterStreamService::WithRawCallbackMethod_RunStep<
    proto::MasterStreamService::WithRawCallbackMethod_RunStepOneMessage<
        proto::MasterStreamService::Service>>;

// What both methods do once the request has come: decode it message by
// message, run the step on the pool once every feed is complete, then write
// the fetches one message at a time (gRPC allows one write in flight), the
// last one together with the status. `Reactor` is gRPC's bidirectional or
// server-streaming reactor; the two have the same write calls.
template <typename Reactor>
class StepReactor : public Reactor {
 public:
  StepReactor(Master* master, ThreadPool* pool)
      : master_(master), pool_(pool) {}

  // Not called for the last write (StartWriteAndFinish).
  void OnWriteDone(bool ok) override {
    outgoing_[next_write_ - 1].Clear();  // let go of the tensor's bytes
    if (!ok) {
      // The client went away; its context reports the cancellation.
      this->Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                                "RunStep stream: the client went away"));
      return;
    }
    WriteNext();
  }

  void OnDone() override { delete this; }

 protected:
  // Decodes one message of the request; true once every feed is complete.
  absl::StatusOr<bool> Decode(const grpc::ByteBuffer& message) {
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

  void StartStep() {
    pool_->Schedule([this] { RunStep(); });
  }

 private:
  void RunStep() {
    absl::StatusOr<std::vector<Tensor>> outputs = feeds_->Finish();
    if (outputs.ok()) {
      std::vector<std::pair<std::string, Tensor>> feeds;
      for (int i = 0; i < step_->feed_name_size(); ++i) {
        feeds.emplace_back(step_->feed_name(i), std::move((*outputs)[i]));
      }
      feeds_.reset();  // the feeds are ours alone now: freed with the step
      outputs =
          master_->RunStep(step_->session_handle(), feeds,
                           std::vector<std::string>(step_->fetch().begin(),
                                                    step_->fetch().end()),
                           std::vector<std::string>(step_->target().begin(),
                                                    step_->target().end()));
    }
    if (!outputs.ok()) {
      this->Finish(ToGrpcStatus(outputs.status()));
      return;
    }
    // At least one message, even without fetches.
    outgoing_ = EncodeTensorStream(proto::RunStepStreamHeader(), *outputs);
    WriteNext();
  }

  void WriteNext() {
    grpc::ByteBuffer* message = &outgoing_[next_write_++];
    if (next_write_ == outgoing_.size()) {
      this->StartWriteAndFinish(message, grpc::WriteOptions(),
                                grpc::Status::OK);
    } else {
      this->StartWrite(message);
    }
  }

  Master* const master_;
  ThreadPool* const pool_;
  std::optional<proto::RunStepRequest> step_;
  std::optional<TensorStreamDecoder> feeds_;
  std::vector<grpc::ByteBuffer> outgoing_;
  size_t next_write_ = 0;
};

// RunStep: reads the request's messages until every feed is complete
// (without waiting for the client's end of stream, a wake-up less).
class StreamedRequestReactor
    : public StepReactor<
          grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>> {
 public:
  StreamedRequestReactor(Master* master, ThreadPool* pool)
      : StepReactor(master, pool) {
    StartRead(&incoming_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the stream ended (or the client went away) too early
      Finish(ToGrpcStatus(Incomplete()));
      return;
    }
    absl::StatusOr<bool> complete = Decode(incoming_);
    incoming_.Clear();
    if (!complete.ok()) {
      Finish(ToGrpcStatus(complete.status()));
    } else if (*complete) {
      StartStep();
    } else {
      StartRead(&incoming_);
    }
  }

 private:
  grpc::ByteBuffer incoming_;
};

// RunStepOneMessage: the whole request has come with the call.
class OneMessageReactor
    : public StepReactor<grpc::ServerWriteReactor<grpc::ByteBuffer>> {
 public:
  OneMessageReactor(Master* master, ThreadPool* pool,
                    const grpc::ByteBuffer& request)
      : StepReactor(master, pool) {
    absl::StatusOr<bool> complete = Decode(request);
    if (!complete.ok()) {
      Finish(ToGrpcStatus(complete.status()));
    } else if (!*complete) {
      Finish(ToGrpcStatus(Incomplete()));
    } else {
      StartStep();
    }
  }
};

class GrpcMasterStreamService : public Base {
 public:
  GrpcMasterStreamService(Master* master, ThreadPool* pool)
      : master_(master), pool_(pool) {}

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* RunStep(
      grpc::CallbackServerContext* ctx) override {
    return new StreamedRequestReactor(master_, pool_);
  }
  grpc::ServerWriteReactor<grpc::ByteBuffer>* RunStepOneMessage(
      grpc::CallbackServerContext* ctx,
      const grpc::ByteBuffer* request) override {
    return new OneMessageReactor(master_, pool_, *request);
  }

 private:
  Master* const master_;
  ThreadPool* const pool_;
};

}  // namespace

std::unique_ptr<grpc::Service> NewGrpcMasterStreamService(Master* master,
                                                          ThreadPool* pool) {
  return std::make_unique<GrpcMasterStreamService>(master, pool);
}

}  // namespace distflow
