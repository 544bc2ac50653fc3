// Op definitions: the inputs, outputs, attributes and shape function of an op
// type.
#ifndef DISTFLOW_GRAPH_OP_DEF_H_
#define DISTFLOW_GRAPH_OP_DEF_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "distflow/types.h"
#include "graph/attr_value.h"

namespace distflow {

class InferenceContext;
using ShapeFn = std::function<absl::Status(InferenceContext* c)>;

// One input or output argument. Its type is either fixed (`type`) or the value
// of a type attribute (`type_attr`). With `number_attr`, the argument is a list
// of that many tensors of the one type.
struct ArgDef {
  std::string name;
  DataType type = DataType::kInvalid;
  std::string type_attr;
  std::string number_attr;
};

struct AttrDef {
  std::string name;
  AttrType type = AttrType::kInt;
  std::optional<proto::AttrValue> default_value;
  // For kType attributes: the types allowed (empty means any).
  std::vector<DataType> allowed_types;
  // For kInt attributes: the smallest value allowed.
  std::optional<int64_t> minimum;
};

struct OpDef {
  std::string name;
  std::vector<ArgDef> inputs;
  std::vector<ArgDef> outputs;
  std::vector<AttrDef> attrs;
  ShapeFn shape_fn;
  // Stateful ops (variables, random numbers, I/O) are never folded or
  // deduplicated.
  bool is_stateful = false;
  std::string summary;

  const AttrDef* FindAttr(const std::string& attr_name) const;
};

// Fluent construction of an OpDef:
//   OpDefBuilder("MatMul").Input("a", "T").Input("b", "T").Output("product",
//   "T")
//       .TypeAttr("T", kNumericTypes).Attr("transpose_a",
//       MakeAttr(false)).SetShapeFn(...)
class OpDefBuilder {
 public:
  explicit OpDefBuilder(std::string name) { def_.name = std::move(name); }

  // An input whose type is attribute `type_attr`.
  OpDefBuilder& Input(std::string name, std::string type_attr);
  // An input of a fixed type.
  OpDefBuilder& Input(std::string name, DataType type);
  // A list input: `number_attr` tensors, all of type attribute `type_attr`.
  OpDefBuilder& InputList(std::string name, std::string type_attr,
                          std::string number_attr);
  // A list input: `number_attr` tensors of a fixed type.
  OpDefBuilder& InputList(std::string name, DataType type,
                          std::string number_attr);
  OpDefBuilder& Output(std::string name, std::string type_attr);
  OpDefBuilder& Output(std::string name, DataType type);
  // A list output: `number_attr` tensors, all of type attribute `type_attr`.
  OpDefBuilder& OutputList(std::string name, std::string type_attr,
                           std::string number_attr);
  // A type attribute limited to `allowed` (all types if empty).
  OpDefBuilder& TypeAttr(std::string name, std::vector<DataType> allowed = {});
  // A required attribute of kind `type`.
  OpDefBuilder& Attr(std::string name, AttrType type);
  // An optional attribute; its kind is that of `default_value`.
  OpDefBuilder& Attr(std::string name, proto::AttrValue default_value);
  // A required int attribute of at least `minimum`.
  OpDefBuilder& IntAttr(std::string name, int64_t minimum);
  OpDefBuilder& Stateful();
  OpDefBuilder& Summary(std::string text);
  OpDefBuilder& SetShapeFn(ShapeFn fn);

  OpDef Build() && { return std::move(def_); }

 private:
  OpDef def_;
};

// Type sets shared by op definitions.
extern const std::vector<DataType>
    kNumericTypes;  // float32, float64, int32, int64, uint8
extern const std::vector<DataType> kFloatingTypes;  // float32, float64

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_OP_DEF_H_
