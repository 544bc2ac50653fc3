// Conversion between tensors, shapes, dtypes and their protobuf forms
// (proto/tensor.proto).
//
// Decoding validates everything it reads (dtype, shape, byte counts), since the
// message may come from the network or a file: a malformed message is
// INVALID_ARGUMENT, never a crash.
#ifndef DISTFLOW_CORE_TENSOR_CODING_H_
#define DISTFLOW_CORE_TENSOR_CODING_H_

#include "absl/status/statusor.h"
#include "distflow/tensor.h"
#include "distflow/tensor_shape.h"
#include "distflow/types.h"
#include "proto/tensor.pb.h"
#include "proto/types.pb.h"

namespace distflow {

proto::DataType DataTypeToProto(DataType dtype);
// INVALID_ARGUMENT for a value that is not a known data type.
absl::StatusOr<DataType> DataTypeFromProto(int value);

void ShapeToProto(const PartialTensorShape& shape,
                  proto::TensorShapeProto* out);
absl::StatusOr<PartialTensorShape> PartialShapeFromProto(
    const proto::TensorShapeProto& shape);
// INVALID_ARGUMENT if the shape is not fully defined.
absl::StatusOr<TensorShape> TensorShapeFromProto(
    const proto::TensorShapeProto& shape);

// Copies the tensor into `out` (fixed-size elements as packed little-endian
// bytes).
void TensorToProto(const Tensor& tensor, proto::TensorProto* out);
absl::StatusOr<Tensor> TensorFromProto(const proto::TensorProto& tensor);

}  // namespace distflow

#endif  // DISTFLOW_CORE_TENSOR_CODING_H_
