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
    proto::MasterStreamService::Service>;

// One RunStep call: reads the step and its feeds until every feed is
// complete (without waiting for the client's end of stream, a wake-up less),
// runs the step on the pool, then writes the fetches one message at a time
// (gRPC allows one write in flight), the last one together with the status.
class RunStepReactor
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  RunStepReactor(Master* master, ThreadPool* pool)
      : master_(master), pool_(pool) {
    StartRead(&incoming_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the stream ended (or the client went away) too early
      Finish(ToGrpcStatus(
          step_.has_value() ? feeds_->Finish().status()
                            : absl::InvalidArgumentError(
                                  "RunStep stream: the client sent no step")));
      return;
    }
    absl::Status s = Decode();
    incoming_.Clear();
    if (!s.ok()) {
      Finish(ToGrpcStatus(s));
    } else if (feeds_->Complete()) {
      pool_->Schedule([this] { RunStep(); });
    } else {
      StartRead(&incoming_);
    }
  }

  // Not called for the last write (StartWriteAndFinish).
  void OnWriteDone(bool ok) override {
    outgoing_[next_write_ - 1].Clear();  // let go of the tensor's bytes
    if (!ok) {
      // The client went away; its context reports the cancellation.
      Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                          "RunStep stream: the client went away"));
      return;
    }
    WriteNext();
  }

  void OnDone() override { delete this; }

 private:
  absl::Status Decode() {
    proto::RunStepStreamHeader header;
    auto framed = ParseFramedMessage(incoming_, &header, "RunStep stream");
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
    return feeds_->AddPieces(header, *framed);
  }

  void RunStep() {
    absl::StatusOr<std::vector<Tensor>> outputs = feeds_->Finish();
    // EncodeTensorStream below makes at least one message.
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
      Finish(ToGrpcStatus(outputs.status()));
      return;
    }
    outgoing_ = EncodeTensorStream(proto::RunStepStreamHeader(), *outputs);
    WriteNext();
  }

  void WriteNext() {
    grpc::ByteBuffer* message = &outgoing_[next_write_++];
    if (next_write_ == outgoing_.size()) {
      StartWriteAndFinish(message, grpc::WriteOptions(), grpc::Status::OK);
    } else {
      StartWrite(message);
    }
  }

  Master* const master_;
  ThreadPool* const pool_;
  grpc::ByteBuffer incoming_;
  std::optional<proto::RunStepRequest> step_;
  std::optional<TensorStreamDecoder> feeds_;
  std::vector<grpc::ByteBuffer> outgoing_;
  size_t next_write_ = 0;
};

class GrpcMasterStreamService : public Base {
 public:
  GrpcMasterStreamService(Master* master, ThreadPool* pool)
      : master_(master), pool_(pool) {}

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* RunStep(
      grpc::CallbackServerContext* ctx) override {
    return new RunStepReactor(master_, pool_);
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
