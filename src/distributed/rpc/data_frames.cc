#include "distributed/rpc/data_frames.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "distributed/rpc/data_socket.h"
#include "distributed/rpc/tensor_wire.h"

namespace distflow {

absl::StatusOr<uint32_t> DecodeFrameLength(const unsigned char bytes[4]) {
  const uint32_t n = bytes[0] | (bytes[1] << 8) | (bytes[2] << 16) |
                     (static_cast<uint32_t>(bytes[3]) << 24);
  if (n > kMaxDataFrameHeader) {
    return absl::InvalidArgumentError(
        absl::StrCat("a frame header of ", n, " bytes (at most ",
                     kMaxDataFrameHeader, " are allowed)"));
  }
  return n;
}

absl::Status ParseFrameHeader(absl::string_view bytes,
                              google::protobuf::MessageLite* header) {
  if (bytes.size() > kMaxDataFrameHeader ||
      !header->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a frame header of ", bytes.size(), " bytes that does not parse"));
  }
  return absl::OkStatus();
}

bool IsDataOffer(const proto::DataFrame& frame) {
  const proto::PushTensorHeader& header = frame.push();
  return header.has_same_host() && header.offset() == 0 &&
         frame.stripe_bytes().empty();
}

absl::StatusOr<DataPush> CheckDataPush(const proto::DataFrame& frame,
                                       size_t stripes) {
  const proto::PushTensorHeader& header = frame.push();
  const int64_t total = header.total_bytes();
  absl::StatusOr<PushedTensorSpec> spec = CheckPushHeader(header, total);
  if (!spec.ok()) return spec.status();
  if (header.offset() != 0 || header.has_same_host() ||
      header.has_small_tensor()) {
    return absl::InvalidArgumentError(
        absl::StrCat("PushTensor '", header.key(),
                     "': a data connection carries whole tensors of fixed-size "
                     "types only"));
  }
  absl::StatusOr<size_t> bytes = TensorByteSize(spec->dtype, spec->shape);
  if (!bytes.ok()) {
    return absl::Status(bytes.status().code(),
                        absl::StrCat("PushTensor '", header.key(),
                                     "': ", bytes.status().message()));
  }
  if (*bytes != static_cast<uint64_t>(total)) {
    return absl::InvalidArgumentError(
        absl::StrCat("PushTensor '", header.key(), "': ", total,
                     " bytes for a ", DataTypeName(spec->dtype),
                     spec->shape.DebugString(), " tensor of ", *bytes));
  }
  DataPush push;
  push.dtype = spec->dtype;
  push.shape = std::move(spec->shape);
  push.total = total;
  // (Each part is checked against what is left, so that no sum overflows.)
  int64_t left = total;
  bool fits = static_cast<size_t>(frame.stripe_bytes_size()) <= stripes;
  for (int i = 0; fits && i < frame.stripe_bytes_size(); ++i) {
    const int64_t n = frame.stripe_bytes(i);
    fits = n >= 0 && n <= left;
    left -= fits ? n : 0;
  }
  if (!fits) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PushTensor '", header.key(), "': its ", frame.stripe_bytes_size(),
        " stripe part(s) do not fit a tensor of ", total,
        " bytes on a connection with ", stripes, " stripe(s)"));
  }
  push.first = left;
  push.stripe_parts.assign(frame.stripe_bytes().begin(),
                           frame.stripe_bytes().end());
  return push;
}

absl::Status CheckDataAnswer(const proto::DataAnswer& answer,
                             absl::Status* carried) {
  if (answer.run_graph_bytes() < 0 ||
      answer.run_graph_bytes() > kMaxRunGraphAnswerBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("an answer that announces ", answer.run_graph_bytes(),
                     " bytes of RunGraph response (at most ",
                     kMaxRunGraphAnswerBytes, " are allowed)"));
  }
  const int code = answer.code();
  // (absl::StatusCode's values: 0 to 16.)
  if (code < 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    *carried = absl::UnknownError(
        absl::StrCat("status code ", code, ": ", answer.message()));
  } else {
    *carried =
        absl::Status(static_cast<absl::StatusCode>(code), answer.message());
  }
  return absl::OkStatus();
}

}  // namespace distflow
