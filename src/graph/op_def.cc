#include "graph/op_def.h"

#include <utility>

#include "base/logging.h"

namespace distflow {

const std::vector<DataType> kNumericTypes = {
    DataType::kFloat, DataType::kDouble, DataType::kInt32, DataType::kInt64,
    DataType::kUInt8};
const std::vector<DataType> kFloatingTypes = {DataType::kFloat,
                                              DataType::kDouble};

const AttrDef* OpDef::FindAttr(const std::string& attr_name) const {
  for (const AttrDef& a : attrs) {
    if (a.name == attr_name) return &a;
  }
  return nullptr;
}

OpDefBuilder& OpDefBuilder::Input(std::string name, std::string type_attr) {
  def_.inputs.push_back(
      ArgDef{std::move(name), DataType::kInvalid, std::move(type_attr), ""});
  return *this;
}
OpDefBuilder& OpDefBuilder::Input(std::string name, DataType type) {
  def_.inputs.push_back(ArgDef{std::move(name), type, "", ""});
  return *this;
}
OpDefBuilder& OpDefBuilder::InputList(std::string name, std::string type_attr,
                                      std::string number_attr) {
  def_.inputs.push_back(ArgDef{std::move(name), DataType::kInvalid,
                               std::move(type_attr), std::move(number_attr)});
  return *this;
}
OpDefBuilder& OpDefBuilder::InputList(std::string name, DataType type,
                                      std::string number_attr) {
  def_.inputs.push_back(
      ArgDef{std::move(name), type, "", std::move(number_attr)});
  return *this;
}
OpDefBuilder& OpDefBuilder::Output(std::string name, std::string type_attr) {
  def_.outputs.push_back(
      ArgDef{std::move(name), DataType::kInvalid, std::move(type_attr), ""});
  return *this;
}
OpDefBuilder& OpDefBuilder::Output(std::string name, DataType type) {
  def_.outputs.push_back(ArgDef{std::move(name), type, "", ""});
  return *this;
}
OpDefBuilder& OpDefBuilder::OutputList(std::string name, std::string type_attr,
                                       std::string number_attr) {
  def_.outputs.push_back(ArgDef{std::move(name), DataType::kInvalid,
                                std::move(type_attr), std::move(number_attr)});
  return *this;
}
OpDefBuilder& OpDefBuilder::TypeAttr(std::string name,
                                     std::vector<DataType> allowed) {
  AttrDef a;
  a.name = std::move(name);
  a.type = AttrType::kType;
  a.allowed_types = std::move(allowed);
  def_.attrs.push_back(std::move(a));
  return *this;
}
OpDefBuilder& OpDefBuilder::Attr(std::string name, AttrType type) {
  AttrDef a;
  a.name = std::move(name);
  a.type = type;
  def_.attrs.push_back(std::move(a));
  return *this;
}
OpDefBuilder& OpDefBuilder::Attr(std::string name,
                                 proto::AttrValue default_value) {
  auto type = AttrTypeOf(default_value);
  DF_CHECK(type.ok()) << "op " << def_.name << " attribute " << name
                      << ": empty default";
  AttrDef a;
  a.name = std::move(name);
  a.type = *type;
  a.default_value = std::move(default_value);
  def_.attrs.push_back(std::move(a));
  return *this;
}
OpDefBuilder& OpDefBuilder::IntAttr(std::string name, int64_t minimum) {
  AttrDef a;
  a.name = std::move(name);
  a.type = AttrType::kInt;
  a.minimum = minimum;
  def_.attrs.push_back(std::move(a));
  return *this;
}
OpDefBuilder& OpDefBuilder::Stateful() {
  def_.is_stateful = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::Summary(std::string text) {
  def_.summary = std::move(text);
  return *this;
}
OpDefBuilder& OpDefBuilder::SetShapeFn(ShapeFn fn) {
  def_.shape_fn = std::move(fn);
  return *this;
}

}  // namespace distflow
