// The RunStep stream's decoder (TensorStreamDecoder, tensor_stream.h) on a
// sequence of messages, as a client's stream delivers them to the master
// (and the master's to a client). The input is records; each starts with a
// mode byte:
//   bit 0 clear: [u16 n][n bytes], one raw message;
//   bit 0 set: a message built from fields, so that most records reach the
//     piece checks: pieces (1-4), each [index i8][dtype u8][dims: count u8
//     (0-3), each u8 as a power of two or a small size][offset i64]
//     [length i64], then [u16 n] raw bytes after the header.
// The stream expects three tensors and may hold 16 MiB in all.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "distributed/rpc/tensor_stream.h"
#include "fuzz/fuzz_input.h"
#include "proto/master.pb.h"

namespace {

using ::distflow::fuzz::Dim;
using ::distflow::fuzz::Input;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace distflow;  // NOLINT
  TensorStreamDecoder decoder("feed", {"a", "b", "c"},
                              /*max_bytes=*/int64_t{16} << 20);
  Input in{data, size};
  uint8_t mode = 0;
  while (in.Take(&mode, 1)) {
    std::string bytes;
    if ((mode & 1) == 0) {
      uint16_t n = 0;
      if (!in.Take(&n, 2)) break;
      const size_t take = n < in.size ? n : in.size;
      bytes.assign(reinterpret_cast<const char*>(in.data), take);
      in.data += take;
      in.size -= take;
    } else {
      proto::RunStepStreamHeader header;
      bool ok = true;
      for (int p = 0; p < 1 + (mode >> 1) % 4 && ok; ++p) {
        int8_t index = 0;
        uint8_t dtype = 0, ndims = 0;
        int64_t offset = 0, length = 0;
        ok = in.Take(&index, 1) && in.Take(&dtype, 1) && in.Take(&ndims, 1);
        if (!ok) break;
        proto::TensorPiece* piece = header.add_piece();
        piece->set_index(index);
        static constexpr int kTypes[] = {0, 1, 2, 3, 4, 7, 9, 10, 20};
        piece->set_dtype(static_cast<proto::DataType>(kTypes[dtype % 9]));
        for (int i = 0; i < ndims % 4 && ok; ++i) {
          uint8_t code = 0;
          ok = in.Take(&code, 1);
          piece->mutable_shape()->add_dim(Dim(code));
        }
        ok = ok && in.Take(&offset, 8) && in.Take(&length, 8);
        piece->set_offset(offset);
        piece->set_length(length);
      }
      uint16_t n = 0;
      if (!ok || !in.Take(&n, 2)) break;
      bytes = FramedHeader(header);
      const size_t take = n < in.size ? n : in.size;
      bytes.append(reinterpret_cast<const char*>(in.data), take);
      in.data += take;
      in.size -= take;
    }
    grpc::Slice slice(bytes);
    grpc::ByteBuffer message(&slice, 1);
    proto::RunStepStreamHeader parsed;
    if (!decoder.Add(message, &parsed).ok()) break;  // the call ends
  }
  (void)decoder.Complete();
  absl::StatusOr<std::vector<Tensor>> tensors = decoder.Finish();
  if (tensors.ok()) {
    for (const Tensor& t : *tensors) {
      if (!t.IsInitialized() || DataTypeSize(t.dtype()) == 0) continue;
      const char* p = static_cast<const char*>(t.raw_data());
      volatile char sink = 0;
      for (size_t i = 0; i < t.TotalBytes(); ++i) sink ^= p[i];
      (void)sink;
    }
  }
  return 0;
}
