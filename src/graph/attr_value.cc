#include "graph/attr_value.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "core/tensor_coding.h"

namespace distflow {
namespace {

absl::StatusOr<const proto::AttrValue*> Find(const AttrMap& attrs,
                                             absl::string_view name) {
  auto it = attrs.find(std::string(name));
  if (it == attrs.end()) {
    return absl::NotFoundError(
        absl::StrCat("attribute '", name, "' is missing"));
  }
  return &it->second;
}

absl::Status WrongKind(absl::string_view name, const proto::AttrValue& v,
                       AttrType want) {
  auto have = AttrTypeOf(v);
  return absl::InvalidArgumentError(
      absl::StrCat("attribute '", name, "' holds ",
                   have.ok() ? AttrTypeName(*have) : "nothing", ", expected ",
                   AttrTypeName(want)));
}

}  // namespace

std::string AttrTypeName(AttrType type) {
  switch (type) {
    case AttrType::kInt:
      return "int";
    case AttrType::kFloat:
      return "float";
    case AttrType::kBool:
      return "bool";
    case AttrType::kString:
      return "string";
    case AttrType::kType:
      return "type";
    case AttrType::kShape:
      return "shape";
    case AttrType::kTensor:
      return "tensor";
    case AttrType::kIntList:
      return "list(int)";
    case AttrType::kFloatList:
      return "list(float)";
    case AttrType::kTypeList:
      return "list(type)";
    case AttrType::kShapeList:
      return "list(shape)";
    case AttrType::kStringList:
      return "list(string)";
  }
  return "unknown";
}

absl::StatusOr<AttrType> AttrTypeOf(const proto::AttrValue& value) {
  switch (value.value_case()) {
    case proto::AttrValue::kI:
      return AttrType::kInt;
    case proto::AttrValue::kF:
      return AttrType::kFloat;
    case proto::AttrValue::kB:
      return AttrType::kBool;
    case proto::AttrValue::kS:
      return AttrType::kString;
    case proto::AttrValue::kType:
      return AttrType::kType;
    case proto::AttrValue::kShape:
      return AttrType::kShape;
    case proto::AttrValue::kTensor:
      return AttrType::kTensor;
    case proto::AttrValue::kList: {
      // A list records its kind by which repeated field is used; an empty list
      // has none and is accepted as any list kind by the op validator.
      const auto& l = value.list();
      if (l.i_size() > 0) return AttrType::kIntList;
      if (l.f_size() > 0) return AttrType::kFloatList;
      if (l.type_size() > 0) return AttrType::kTypeList;
      if (l.shape_size() > 0) return AttrType::kShapeList;
      if (l.s_size() > 0) return AttrType::kStringList;
      return AttrType::kIntList;
    }
    case proto::AttrValue::VALUE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("attribute value is empty");
}

proto::AttrValue MakeAttr(int64_t v) {
  proto::AttrValue a;
  a.set_i(v);
  return a;
}
proto::AttrValue MakeAttr(int v) { return MakeAttr(static_cast<int64_t>(v)); }
proto::AttrValue MakeAttr(float v) {
  proto::AttrValue a;
  a.set_f(v);
  return a;
}
proto::AttrValue MakeAttr(bool v) {
  proto::AttrValue a;
  a.set_b(v);
  return a;
}
proto::AttrValue MakeAttr(absl::string_view v) {
  proto::AttrValue a;
  a.set_s(std::string(v));
  return a;
}
proto::AttrValue MakeAttr(const char* v) {
  return MakeAttr(absl::string_view(v));
}
proto::AttrValue MakeAttr(DataType v) {
  proto::AttrValue a;
  a.set_type(DataTypeToProto(v));
  return a;
}
proto::AttrValue MakeAttr(const PartialTensorShape& v) {
  proto::AttrValue a;
  ShapeToProto(v, a.mutable_shape());
  return a;
}
proto::AttrValue MakeAttr(const TensorShape& v) {
  return MakeAttr(PartialTensorShape(v));
}
proto::AttrValue MakeAttr(const Tensor& v) {
  proto::AttrValue a;
  TensorToProto(v, a.mutable_tensor());
  return a;
}
proto::AttrValue MakeAttr(const std::vector<int64_t>& v) {
  proto::AttrValue a;
  a.mutable_list();
  for (int64_t x : v) a.mutable_list()->add_i(x);
  return a;
}
proto::AttrValue MakeAttr(const std::vector<float>& v) {
  proto::AttrValue a;
  a.mutable_list();
  for (float x : v) a.mutable_list()->add_f(x);
  return a;
}
proto::AttrValue MakeAttr(const std::vector<DataType>& v) {
  proto::AttrValue a;
  a.mutable_list();
  for (DataType x : v) a.mutable_list()->add_type(DataTypeToProto(x));
  return a;
}
proto::AttrValue MakeAttr(const std::vector<PartialTensorShape>& v) {
  proto::AttrValue a;
  a.mutable_list();
  for (const auto& x : v) ShapeToProto(x, a.mutable_list()->add_shape());
  return a;
}
proto::AttrValue MakeAttr(const std::vector<std::string>& v) {
  proto::AttrValue a;
  a.mutable_list();
  for (const auto& x : v) a.mutable_list()->add_s(x);
  return a;
}

#define DF_GET_SCALAR_ATTR_(CType, Case, kind, getter)                 \
  absl::Status GetAttr(const AttrMap& attrs, absl::string_view name,   \
                       CType* out) {                                   \
    DF_ASSIGN_OR_RETURN(const proto::AttrValue* v, Find(attrs, name)); \
    if (v->value_case() != proto::AttrValue::Case)                     \
      return WrongKind(name, *v, kind);                                \
    *out = static_cast<CType>(v->getter());                            \
    return absl::OkStatus();                                           \
  }
DF_GET_SCALAR_ATTR_(int64_t, kI, AttrType::kInt, i)
DF_GET_SCALAR_ATTR_(float, kF, AttrType::kFloat, f)
DF_GET_SCALAR_ATTR_(bool, kB, AttrType::kBool, b)
DF_GET_SCALAR_ATTR_(std::string, kS, AttrType::kString, s)
#undef DF_GET_SCALAR_ATTR_

absl::Status GetAttr(const AttrMap& attrs, absl::string_view name, int* out) {
  int64_t value = 0;
  DF_RETURN_IF_ERROR(GetAttr(attrs, name, &value));
  // A value from a graph of unknown origin must not wrap into a small int.
  if (value < std::numeric_limits<int>::min() ||
      value > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute '", name, "' is ", value, ", which does not fit in an int"));
  }
  *out = static_cast<int>(value);
  return absl::OkStatus();
}

// Reads an attribute held in field `field` of kind `kind`, decoding it with
// `decode` (which validates it).
template <typename T, typename Decode>
absl::Status DecodeAttr(const AttrMap& attrs, absl::string_view name,
                        proto::AttrValue::ValueCase field, AttrType kind,
                        Decode decode, T* out) {
  DF_ASSIGN_OR_RETURN(const proto::AttrValue* v, Find(attrs, name));
  if (v->value_case() != field) return WrongKind(name, *v, kind);
  absl::StatusOr<T> value = decode(*v);
  if (!value.ok()) {
    return AddErrorContext(value.status(),
                           absl::StrCat("attribute '", name, "'"));
  }
  *out = *std::move(value);
  return absl::OkStatus();
}

absl::Status GetAttr(const AttrMap& attrs, absl::string_view name,
                     DataType* out) {
  return DecodeAttr(
      attrs, name, proto::AttrValue::kType, AttrType::kType,
      [](const proto::AttrValue& v) { return DataTypeFromProto(v.type()); },
      out);
}

absl::Status GetAttr(const AttrMap& attrs, absl::string_view name,
                     PartialTensorShape* out) {
  return DecodeAttr(
      attrs, name, proto::AttrValue::kShape, AttrType::kShape,
      [](const proto::AttrValue& v) {
        return PartialShapeFromProto(v.shape());
      },
      out);
}

absl::Status GetAttr(const AttrMap& attrs, absl::string_view name,
                     Tensor* out) {
  return DecodeAttr(
      attrs, name, proto::AttrValue::kTensor, AttrType::kTensor,
      [](const proto::AttrValue& v) { return TensorFromProto(v.tensor()); },
      out);
}

absl::Status GetAttr(const AttrMap& attrs, absl::string_view name,
                     std::vector<int64_t>* out) {
  DF_ASSIGN_OR_RETURN(const proto::AttrValue* v, Find(attrs, name));
  if (v->value_case() != proto::AttrValue::kList)
    return WrongKind(name, *v, AttrType::kIntList);
  out->assign(v->list().i().begin(), v->list().i().end());
  return absl::OkStatus();
}

absl::Status GetAttr(const AttrMap& attrs, absl::string_view name,
                     std::vector<DataType>* out) {
  DF_ASSIGN_OR_RETURN(const proto::AttrValue* v, Find(attrs, name));
  if (v->value_case() != proto::AttrValue::kList)
    return WrongKind(name, *v, AttrType::kTypeList);
  out->clear();
  for (int t : v->list().type()) {
    auto dtype = DataTypeFromProto(t);
    if (!dtype.ok())
      return AddErrorContext(dtype.status(),
                             absl::StrCat("attribute '", name, "'"));
    out->push_back(*dtype);
  }
  return absl::OkStatus();
}

absl::Status GetAttr(const AttrMap& attrs, absl::string_view name,
                     std::vector<std::string>* out) {
  DF_ASSIGN_OR_RETURN(const proto::AttrValue* v, Find(attrs, name));
  if (v->value_case() != proto::AttrValue::kList) {
    return WrongKind(name, *v, AttrType::kStringList);
  }
  out->assign(v->list().s().begin(), v->list().s().end());
  return absl::OkStatus();
}

std::string AttrValueString(const proto::AttrValue& value) {
  switch (value.value_case()) {
    case proto::AttrValue::kI:
      return absl::StrCat(value.i());
    case proto::AttrValue::kF:
      return absl::StrCat(value.f());
    case proto::AttrValue::kB:
      return value.b() ? "true" : "false";
    case proto::AttrValue::kS:
      return absl::StrCat("\"", value.s(), "\"");
    case proto::AttrValue::kType:
      return DataTypeName(static_cast<DataType>(value.type()));
    case proto::AttrValue::kShape: {
      auto s = PartialShapeFromProto(value.shape());
      return s.ok() ? s->DebugString() : "<bad shape>";
    }
    case proto::AttrValue::kTensor: {
      auto t = TensorFromProto(value.tensor());
      return t.ok() ? absl::StrCat(t->TypeString(), " ", t->DebugString(20, 3))
                    : "<bad tensor>";
    }
    case proto::AttrValue::kList: {
      const auto& l = value.list();
      std::vector<std::string> items;
      for (auto i : l.i()) items.push_back(absl::StrCat(i));
      for (auto f : l.f()) items.push_back(absl::StrCat(f));
      for (auto b : l.b()) items.push_back(b ? "true" : "false");
      for (auto t : l.type())
        items.push_back(DataTypeName(static_cast<DataType>(t)));
      for (const auto& s : l.s()) items.push_back(absl::StrCat("\"", s, "\""));
      for (const auto& sh : l.shape()) {
        auto s = PartialShapeFromProto(sh);
        items.push_back(s.ok() ? s->DebugString() : "<bad shape>");
      }
      return absl::StrCat("[", absl::StrJoin(items, ","), "]");
    }
    case proto::AttrValue::VALUE_NOT_SET:
      break;
  }
  return "<empty>";
}

}  // namespace distflow
