// The data connection's decoders (src/distributed/rpc/data_frames.h) on
// arbitrary bytes, as a peer's socket delivers them: the hello, then frames
// of [4-byte length][header], each tried as a DataFrame (a push checked
// against a connection of 0-7 stripes) and as a DataAnswer. The first byte
// picks the stripes.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "distributed/rpc/data_frames.h"
#include "distributed/rpc/data_socket.h"
#include "proto/worker.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace distflow;  // NOLINT
  if (size < 1) return 0;
  const size_t stripes = data[0] % kMaxDataSockets;
  ++data;
  --size;
  DataHello hello;
  if (size >= kDataHelloBytes &&
      DecodeDataHello(reinterpret_cast<const char*>(data), &hello)) {
    data += kDataHelloBytes;
    size -= kDataHelloBytes;
  }
  while (size >= 4) {
    absl::StatusOr<uint32_t> n = DecodeFrameLength(data);
    data += 4;
    size -= 4;
    if (!n.ok()) break;
    const size_t take = *n < size ? *n : size;
    const absl::string_view bytes(reinterpret_cast<const char*>(data), take);
    data += take;
    size -= take;
    proto::DataFrame frame;
    if (ParseFrameHeader(bytes, &frame).ok() && frame.has_push() &&
        !IsDataOffer(frame)) {
      absl::StatusOr<DataPush> push = CheckDataPush(frame, stripes);
      if (push.ok()) {
        // What the listener then reads must add up to the tensor's bytes.
        int64_t sum = push->first;
        for (const int64_t part : push->stripe_parts) {
          if (part < 0 || part > push->total - sum) __builtin_trap();
          sum += part;
        }
        if (sum != push->total || push->stripe_parts.size() > stripes) {
          __builtin_trap();
        }
      }
    }
    proto::DataAnswer answer;
    absl::Status carried;
    if (ParseFrameHeader(bytes, &answer).ok()) {
      (void)CheckDataAnswer(answer, &carried);
    }
  }
  return 0;
}
