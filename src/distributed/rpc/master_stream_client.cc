#include "distributed/rpc/master_stream_client.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "distributed/rpc/completion_queue_spin.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/tensor_stream.h"
#include "proto/master.pb.h"

namespace distflow {
namespace {

constexpr char kRunStepMethod[] = "/distflow.proto.MasterStreamService/RunStep";
// The same step when its request is one message (the master gets it whole
// with the call). On the wire both are streams; only the master's handling
// differs, so this client drives both alike.
constexpr char kRunStepOneMessageMethod[] =
    "/distflow.proto.MasterStreamService/RunStepOneMessage";

// Tags of the call's operations on its completion queue. One write and one
// read may be in flight at once.
enum Op : intptr_t { kWrite = 1, kRead, kFinish };

void* Tag(Op op) { return reinterpret_cast<void*>(op); }

}  // namespace

MasterStreamClient::MasterStreamClient(std::shared_ptr<grpc::Channel> channel,
                                       std::string address)
    : stub_(std::move(channel)), address_(std::move(address)) {}

absl::StatusOr<std::vector<Tensor>> MasterStreamClient::RunStep(
    const std::string& handle,
    const std::vector<std::pair<std::string, Tensor>>& feeds,
    const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets, int64_t deadline_ms) {
  proto::RunStepStreamHeader first;
  proto::RunStepRequest* step = first.mutable_step();
  step->set_session_handle(handle);
  std::vector<Tensor> values;
  values.reserve(feeds.size());
  for (const auto& [name, value] : feeds) {
    step->add_feed_name(name);
    values.push_back(value);
  }
  for (const std::string& f : fetches) step->add_fetch(f);
  for (const std::string& t : targets) step->add_target(t);
  std::vector<grpc::ByteBuffer> outgoing = EncodeTensorStream(first, values);
  values.clear();  // the messages hold the tensors now

  grpc::ClientContext ctx;
  ctx.set_deadline(DeadlineAfterMs(deadline_ms));
  // The call's metadata goes with its first message: one write less.
  ctx.set_initial_metadata_corked(true);
  // The calling thread drives the call on a queue of its own, as gRPC's
  // blocking calls do.
  grpc::CompletionQueue cq;
  auto call = stub_.PrepareCall(
      &ctx, outgoing.size() == 1 ? kRunStepOneMessageMethod : kRunStepMethod,
      &cq);
  call->StartCall(nullptr);  // corked: no event

  TensorStreamDecoder decoder("fetch", fetches);
  grpc::ByteBuffer incoming;
  absl::Status decode_error;
  bool reading = true;  // a read is in flight
  bool writing = false;
  bool write_failed = false;
  size_t next = 0;
  auto write_next = [&] {
    if (next == outgoing.size() || write_failed) return;
    if (next + 1 == outgoing.size()) {
      call->WriteLast(outgoing[next], grpc::WriteOptions(), Tag(kWrite));
    } else {
      call->Write(outgoing[next], Tag(kWrite));
    }
    ++next;
    writing = true;
  };
  call->Read(&incoming, Tag(kRead));
  write_next();
  while (reading || writing) {
    void* tag = nullptr;
    bool ok = false;
    // Polls for a while before sleeping: a small step's reply comes back in
    // tens of microseconds (completion_queue_spin.h).
    if (!NextAfterSpinning(&cq, CallerSpin(), &tag, &ok)) break;
    if (tag == Tag(kWrite)) {
      writing = false;
      outgoing[next - 1].Clear();    // let go of the tensor's bytes
      if (!ok) write_failed = true;  // the call ended: Finish says why
      write_next();
    } else if (tag == Tag(kRead)) {
      reading = false;
      if (!ok) continue;  // the stream ended: Finish says how
      proto::RunStepStreamHeader header;
      if (decode_error.ok()) decode_error = decoder.Add(incoming, &header);
      incoming.Clear();
      if (!decode_error.ok()) {
        ctx.TryCancel();  // stop the call; drain what is in flight
        write_failed = true;
      }
      // The master's last message comes with its status: once every fetch
      // is complete, Finish reads that without another read.
      if (decode_error.ok() && !decoder.Complete()) {
        call->Read(&incoming, Tag(kRead));
        reading = true;
      }
    }
  }
  grpc::Status status;
  call->Finish(&status, Tag(kFinish));
  void* tag = nullptr;
  bool ok = false;
  while (cq.Next(&tag, &ok) && tag != Tag(kFinish)) {
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  if (!decode_error.ok()) return decode_error;
  absl::Status s = FromGrpcCallStatus(status, "(master)", address_, "RunStep");
  if (!s.ok()) return s;
  return decoder.Finish();
}

}  // namespace distflow
