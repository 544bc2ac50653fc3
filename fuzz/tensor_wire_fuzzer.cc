// The PushTensor wire decoders (tensor_wire.h) on one arbitrary message, as a
// peer's PushTensor call delivers it: the framing, the header check, and a
// whole-message push through PushAssembler (same-host reads off), plus the
// protobuf answers (ProtoFromByteBuffer).
#include <cstddef>
#include <cstdint>
#include <string>

#include "distributed/push_budget.h"
#include "distributed/rpc/tensor_wire.h"
#include "proto/worker.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace distflow;  // NOLINT
  static PushBudget* budget =
      new PushBudget(int64_t{16} << 20, int64_t{32} << 20);
  // Two slices, split where the first byte says: decoders must read across
  // gRPC's slices.
  const size_t split = size == 0 ? 0 : data[0] % (size + 1);
  grpc::Slice parts[2] = {
      grpc::Slice(reinterpret_cast<const char*>(data), split),
      grpc::Slice(reinterpret_cast<const char*>(data) + split, size - split)};
  grpc::ByteBuffer message(parts, 2);

  proto::PushTensorHeader header;
  absl::StatusOr<FramedMessage> framed =
      ParseFramedMessage(message, &header, "PushTensor");
  if (framed.ok()) {
    if (framed->data_start > framed->size) __builtin_trap();
    const int64_t data_len =
        static_cast<int64_t>(framed->size - framed->data_start);
    absl::StatusOr<PushedTensorSpec> spec = CheckPushHeader(header, data_len);
    if (spec.ok()) {
      absl::StatusOr<size_t> bytes = TensorByteSize(spec->dtype, spec->shape);
      if (!bytes.ok() || header.offset() < 0 ||
          header.offset() + data_len > static_cast<int64_t>(*bytes)) {
        __builtin_trap();  // the check let through what does not fit
      }
    }
  }
  PushAssembler assembler(nullptr, /*same_host_reads=*/false, nullptr, budget);
  absl::StatusOr<PushAssembler::Complete> out = assembler.Add(message, "peer");
  if (out.ok() && out->value.IsInitialized() &&
      DataTypeSize(out->value.dtype()) != 0) {
    const char* p = static_cast<const char*>(out->value.raw_data());
    volatile char sink = 0;
    for (size_t i = 0; i < out->value.TotalBytes(); ++i) sink ^= p[i];
    (void)sink;
  }
  proto::PushTensorStreamResponse answer;
  (void)ProtoFromByteBuffer(message, &answer);
  return 0;
}
