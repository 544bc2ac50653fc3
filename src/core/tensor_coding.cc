#include "core/tensor_coding.h"

#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace distflow {

proto::DataType DataTypeToProto(DataType dtype) {
  return static_cast<proto::DataType>(dtype);
}

absl::StatusOr<DataType> DataTypeFromProto(int value) {
  const DataType dtype = static_cast<DataType>(value);
  if (!DataTypeIsValid(dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown data type ", value));
  }
  return dtype;
}

void ShapeToProto(const PartialTensorShape& shape,
                  proto::TensorShapeProto* out) {
  out->Clear();
  if (shape.unknown_rank()) {
    out->set_unknown_rank(true);
    return;
  }
  for (int64_t d : shape.dim_sizes()) out->add_dim(d);
}

absl::StatusOr<PartialTensorShape> PartialShapeFromProto(
    const proto::TensorShapeProto& shape) {
  if (shape.unknown_rank()) {
    if (shape.dim_size() > 0) {
      return absl::InvalidArgumentError(
          "shape has unknown_rank set but also lists dimensions");
    }
    return PartialTensorShape::UnknownRank();
  }
  return PartialTensorShape::FromDims(shape.dim());
}

absl::StatusOr<TensorShape> TensorShapeFromProto(
    const proto::TensorShapeProto& shape) {
  if (shape.unknown_rank()) {
    return absl::InvalidArgumentError(
        "a tensor's shape must have a known rank");
  }
  return TensorShape::FromDims(shape.dim());
}

void TensorToProto(const Tensor& tensor, proto::TensorProto* out) {
  out->Clear();
  out->set_dtype(DataTypeToProto(tensor.dtype()));
  ShapeToProto(tensor.shape(), out->mutable_shape());
  switch (tensor.dtype()) {
    case DataType::kString:
      for (const std::string& s : tensor.flat<std::string>())
        out->add_string_val(s);
      break;
    case DataType::kResource:
      for (const ResourceHandle& h : tensor.flat<ResourceHandle>()) {
        proto::ResourceHandleProto* p = out->add_resource_handle_val();
        p->set_device(h.device);
        p->set_container(h.container);
        p->set_name(h.name);
        p->set_dtype(DataTypeToProto(h.dtype));
      }
      break;
    default:
      out->set_tensor_content(static_cast<const char*>(tensor.raw_data()),
                              tensor.TotalBytes());
  }
}

absl::StatusOr<Tensor> TensorFromProto(const proto::TensorProto& proto) {
  DF_ASSIGN_OR_RETURN(DataType dtype, DataTypeFromProto(proto.dtype()));
  DF_ASSIGN_OR_RETURN(TensorShape shape, TensorShapeFromProto(proto.shape()));
  // Refuses (naming the shape) a size that overflows or is beyond the cap
  // before any count is compared with it or anything is allocated.
  DF_ASSIGN_OR_RETURN(const size_t bytes, TensorByteSize(dtype, shape));
  const int64_t n = shape.num_elements();
  auto count_error = [&](int64_t got, absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TensorProto of ", DataTypeName(dtype), shape.DebugString(), " needs ",
        n, " ", what, " but has ", got));
  };
  switch (dtype) {
    case DataType::kString: {
      if (proto.string_val_size() != n)
        return count_error(proto.string_val_size(), "strings");
      DF_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape));
      auto out = t.flat<std::string>();
      for (int64_t i = 0; i < n; ++i) out[i] = proto.string_val(i);
      return t;
    }
    case DataType::kResource: {
      if (proto.resource_handle_val_size() != n) {
        return count_error(proto.resource_handle_val_size(),
                           "resource handles");
      }
      DF_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape));
      auto out = t.flat<ResourceHandle>();
      for (int64_t i = 0; i < n; ++i) {
        const proto::ResourceHandleProto& p = proto.resource_handle_val(i);
        DF_ASSIGN_OR_RETURN(DataType value_dtype, DataTypeFromProto(p.dtype()));
        out[i] =
            ResourceHandle{p.device(), p.container(), p.name(), value_dtype};
      }
      return t;
    }
    default: {
      if (proto.tensor_content().size() != bytes) {
        return count_error(static_cast<int64_t>(proto.tensor_content().size()),
                           "content bytes");
      }
      DF_ASSIGN_OR_RETURN(Tensor t,
                          Tensor::Create(dtype, shape, /*zero=*/false));
      if (bytes > 0)
        std::memcpy(t.raw_data(), proto.tensor_content().data(), bytes);
      if (dtype == DataType::kBool) {
        // A bool must be 0 or 1 in memory; normalize bytes from the wire.
        auto* b = static_cast<uint8_t*>(t.raw_data());
        for (size_t i = 0; i < bytes; ++i) b[i] = b[i] != 0;
      }
      return t;
    }
  }
}

}  // namespace distflow
