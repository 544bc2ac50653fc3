// Chunked PushTensor reassembly (PushAssembler, chunk_assembler.h) on a
// sequence of messages from a few peers, as the worker service takes them.
// The input is records; each starts with a mode byte:
//   bit 0 clear: [u16 n][n bytes], one raw PushTensor message;
//   bit 0 set: a chunk built from fields, so that most records reach the
//     reassembly itself: [step u8][dims: count u8 (0-3), each u8 as a power
//     of two or a small size][total i64][offset i64][length u16], followed by
//     `length` bytes (fewer if the input ends);
//   bits 1-2: the peer (of four); bit 3: drop the step's partial tensors
//   first (an abort).
// Every tensor the assembler hands out must be whole: its bytes all came.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "distributed/push_budget.h"
#include "distributed/rpc/tensor_wire.h"
#include "fuzz/fuzz_input.h"
#include "proto/worker.pb.h"

namespace {

using namespace distflow;  // NOLINT

using ::distflow::fuzz::Dim;
using ::distflow::fuzz::Input;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The budget keeps every allocation small, as a task's keeps it bounded.
  static PushBudget* budget =
      new PushBudget(int64_t{16} << 20, int64_t{32} << 20);
  PushAssembler assembler(nullptr, /*same_host_reads=*/false, nullptr, budget);
  Input in{data, size};
  uint8_t mode = 0;
  while (in.Take(&mode, 1)) {
    const std::string peer = "peer" + std::to_string((mode >> 1) & 3);
    std::string bytes;
    int64_t step = 0;
    if ((mode & 1) == 0) {
      uint16_t n = 0;
      if (!in.Take(&n, 2)) break;
      const size_t take = n < in.size ? n : in.size;
      bytes.assign(reinterpret_cast<const char*>(in.data), take);
      in.data += take;
      in.size -= take;
    } else {
      uint8_t step_byte = 0, ndims = 0;
      int64_t total = 0, offset = 0;
      uint16_t length = 0;
      if (!in.Take(&step_byte, 1) || !in.Take(&ndims, 1)) break;
      proto::PushTensorHeader header;
      header.set_step_id(step = step_byte % 4);
      header.set_key("k");
      header.set_dtype(proto::DT_FLOAT);
      bool ok = true;
      for (int i = 0; i < ndims % 4 && ok; ++i) {
        uint8_t code = 0;
        ok = in.Take(&code, 1);
        header.mutable_shape()->add_dim(Dim(code));
      }
      if (!ok || !in.Take(&total, 8) || !in.Take(&offset, 8) ||
          !in.Take(&length, 2)) {
        break;
      }
      header.set_total_bytes(total);
      header.set_offset(offset);
      bytes = FramedHeader(header);
      const size_t take = length < in.size ? length : in.size;
      bytes.append(reinterpret_cast<const char*>(in.data), take);
      in.data += take;
      in.size -= take;
    }
    if (mode & 8) assembler.DropStep(step);
    grpc::Slice slice(bytes);
    grpc::ByteBuffer message(&slice, 1);
    absl::StatusOr<PushAssembler::Complete> out = assembler.Add(message, peer);
    if (out.ok() && out->value.IsInitialized() &&
        DataTypeSize(out->value.dtype()) != 0) {
      // Reading every byte lets ASan catch a buffer smaller than its shape.
      const char* p = static_cast<const char*>(out->value.raw_data());
      volatile char sink = 0;
      for (size_t i = 0; i < out->value.TotalBytes(); ++i) sink ^= p[i];
      (void)sink;
    }
  }
  return 0;
}
