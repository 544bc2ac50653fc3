// The decoding and checking of what a data connection carries
// (data_socket.h), apart from its sockets: the frame length prefix, frame
// headers, push frames and answers. The listener, the connection and the
// data_frames fuzz target all run these, so a frame that the fuzzer cannot
// make crash cannot crash a task either.
#ifndef DISTFLOW_DISTRIBUTED_RPC_DATA_FRAMES_H_
#define DISTFLOW_DISTRIBUTED_RPC_DATA_FRAMES_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "distflow/tensor.h"
#include "google/protobuf/message_lite.h"
#include "proto/worker.pb.h"

namespace distflow {

// The length of a frame header from its 4-byte little-endian prefix;
// INVALID_ARGUMENT naming the length when it is over kMaxDataFrameHeader.
absl::StatusOr<uint32_t> DecodeFrameLength(const unsigned char bytes[4]);

// Parses a frame header's bytes into `header`; INVALID_ARGUMENT when they do
// not parse.
absl::Status ParseFrameHeader(absl::string_view bytes,
                              google::protobuf::MessageLite* header);

// Whether a push frame offers its tensor by the same-host path (the offer
// handler checks it) rather than carrying its bytes.
bool IsDataOffer(const proto::DataFrame& frame);

// A push frame whose bytes follow it, checked: the tensor, its size, and how
// its bytes are split between the first socket and the stripes.
struct DataPush {
  DataType dtype = DataType::kInvalid;
  TensorShape shape;
  // The tensor's bytes (TensorByteSize), and those that follow the frame on
  // the first socket; stripe i carries stripe_parts[i] after them.
  int64_t total = 0;
  int64_t first = 0;
  std::vector<int64_t> stripe_parts;
};
// Checks a push frame that is not an offer, on a connection with `stripes`
// stripes: INVALID_ARGUMENT naming the tensor's key when the header does not
// describe a whole tensor of a fixed-size type, or its stripe parts are
// negative, more than the stripes, or do not fit its bytes;
// RESOURCE_EXHAUSTED when the tensor is larger than kMaxTensorBytes. Nothing
// is allocated from what the frame says.
absl::StatusOr<DataPush> CheckDataPush(const proto::DataFrame& frame,
                                       size_t stripes);

// The longest RunGraph answer a connection reads (what protobuf parses).
inline constexpr int64_t kMaxRunGraphAnswerBytes = INT32_MAX;
// Checks an answer: INVALID_ARGUMENT when the bytes it announces are
// negative or over kMaxRunGraphAnswerBytes. Otherwise sets `carried` to the
// call's status that it carries (an unknown code is UNKNOWN, keeping the
// message).
absl::Status CheckDataAnswer(const proto::DataAnswer& answer,
                             absl::Status* carried);

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_DATA_FRAMES_H_
