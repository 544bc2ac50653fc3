// Bytes -> TensorProto -> Tensor: how every tensor from the network or a
// GraphDef's Const attribute is decoded (core/tensor_coding.h). A malformed
// or hostile message must decode to an error, never a crash or an
// allocation larger than the message justifies.
#include <cstddef>
#include <cstdint>

#include "core/tensor_coding.h"
#include "proto/tensor.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  distflow::proto::TensorProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  (void)distflow::PartialShapeFromProto(proto.shape());
  absl::StatusOr<distflow::Tensor> tensor = distflow::TensorFromProto(proto);
  if (tensor.ok()) {
    // What decodes must encode again, and describe itself.
    distflow::proto::TensorProto again;
    distflow::TensorToProto(*tensor, &again);
    (void)tensor->DebugString(20, 3);
  }
  return 0;
}
