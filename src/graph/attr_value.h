// Building and reading node attributes (proto::AttrValue) with type checks.
#ifndef DISTFLOW_GRAPH_ATTR_VALUE_H_
#define DISTFLOW_GRAPH_ATTR_VALUE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "distflow/tensor.h"
#include "distflow/tensor_shape.h"
#include "distflow/types.h"
#include "google/protobuf/map.h"
#include "proto/graph.pb.h"

namespace distflow {

using AttrMap = google::protobuf::Map<std::string, proto::AttrValue>;

// The kinds of value an attribute can hold.
enum class AttrType {
  kInt,
  kFloat,
  kBool,
  kString,
  kType,
  kShape,
  kTensor,
  kIntList,
  kFloatList,
  kTypeList,
  kShapeList,
  kStringList,
};

std::string AttrTypeName(AttrType type);
// The kind of value `value` holds; INVALID_ARGUMENT if it holds none.
absl::StatusOr<AttrType> AttrTypeOf(const proto::AttrValue& value);

proto::AttrValue MakeAttr(int64_t v);
proto::AttrValue MakeAttr(int v);
proto::AttrValue MakeAttr(float v);
proto::AttrValue MakeAttr(bool v);
proto::AttrValue MakeAttr(absl::string_view v);
proto::AttrValue MakeAttr(const char* v);
proto::AttrValue MakeAttr(DataType v);
proto::AttrValue MakeAttr(const PartialTensorShape& v);
proto::AttrValue MakeAttr(const TensorShape& v);
proto::AttrValue MakeAttr(const Tensor& v);
proto::AttrValue MakeAttr(const std::vector<int64_t>& v);
proto::AttrValue MakeAttr(const std::vector<float>& v);
proto::AttrValue MakeAttr(const std::vector<DataType>& v);
proto::AttrValue MakeAttr(const std::vector<PartialTensorShape>& v);
proto::AttrValue MakeAttr(const std::vector<std::string>& v);

// Reads attribute `name` of `attrs` into `*out`. NOT_FOUND if absent;
// INVALID_ARGUMENT if it holds another kind of value or an invalid one.
// Messages name the attribute.
absl::Status GetAttr(const AttrMap& attrs, absl::string_view name,
                     int64_t* out);
absl::Status GetAttr(const AttrMap& attrs, absl::string_view name, int* out);
absl::Status GetAttr(const AttrMap& attrs, absl::string_view name, float* out);
absl::Status GetAttr(const AttrMap& attrs, absl::string_view name, bool* out);
absl::Status GetAttr(const AttrMap& attrs, absl::string_view name,
                     std::string* out);
absl::Status GetAttr(const AttrMap& attrs, absl::string_view name,
                     DataType* out);
absl::Status GetAttr(const AttrMap& attrs, absl::string_view name,
                     PartialTensorShape* out);
absl::Status GetAttr(const AttrMap& attrs, absl::string_view name, Tensor* out);
absl::Status GetAttr(const AttrMap& attrs, absl::string_view name,
                     std::vector<int64_t>* out);
absl::Status GetAttr(const AttrMap& attrs, absl::string_view name,
                     std::vector<DataType>* out);
absl::Status GetAttr(const AttrMap& attrs, absl::string_view name,
                     std::vector<std::string>* out);

// A short readable form of the value: 3, "abc", float32, [2,3], float32[2]
// tensor, [1,2].
std::string AttrValueString(const proto::AttrValue& value);

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_ATTR_VALUE_H_
