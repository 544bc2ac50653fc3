#include "train/tensorboard_graph.h"

#include <string>

namespace distflow {
namespace train {
namespace {

void ConvertShape(const proto::TensorShapeProto& in,
                  proto::TensorBoardShape* out) {
  if (in.unknown_rank()) {
    out->set_unknown_rank(true);
    return;
  }
  for (int64_t size : in.dim()) out->add_dim()->set_size(size);
}

void ConvertShape(const PartialTensorShape& in, proto::TensorBoardShape* out) {
  if (in.unknown_rank()) {
    out->set_unknown_rank(true);
    return;
  }
  for (int64_t size : in.dim_sizes()) out->add_dim()->set_size(size);
}

// False for values TensorBoard's form does not carry (tensors).
bool ConvertAttr(const proto::AttrValue& in, proto::TensorBoardAttrValue* out) {
  switch (in.value_case()) {
    case proto::AttrValue::kS:
      out->set_s(in.s());
      return true;
    case proto::AttrValue::kI:
      out->set_i(in.i());
      return true;
    case proto::AttrValue::kF:
      out->set_f(in.f());
      return true;
    case proto::AttrValue::kB:
      out->set_b(in.b());
      return true;
    case proto::AttrValue::kType:
      out->set_type(in.type());
      return true;
    case proto::AttrValue::kShape:
      ConvertShape(in.shape(), out->mutable_shape());
      return true;
    case proto::AttrValue::kList: {
      const proto::AttrValue::ListValue& l = in.list();
      proto::TensorBoardAttrValue::ListValue* o = out->mutable_list();
      for (const std::string& s : l.s()) o->add_s(s);
      for (int64_t i : l.i()) o->add_i(i);
      for (float f : l.f()) o->add_f(f);
      for (bool b : l.b()) o->add_b(b);
      for (int t : l.type()) o->add_type(static_cast<proto::DataType>(t));
      for (const auto& shape : l.shape()) ConvertShape(shape, o->add_shape());
      return true;
    }
    case proto::AttrValue::kTensor:
    case proto::AttrValue::VALUE_NOT_SET:
      break;
  }
  return false;
}

}  // namespace

proto::TensorBoardGraphDef ToTensorBoardGraph(const Graph& graph) {
  proto::TensorBoardGraphDef out;
  for (const auto& node : graph.nodes()) {
    proto::TensorBoardNodeDef* n = out.add_node();
    n->set_name(node->name());
    n->set_op(node->op());
    for (const std::string& input : node->def().input()) n->add_input(input);
    n->set_device(node->assigned_device().empty() ? node->requested_device()
                                                  : node->assigned_device());
    for (const auto& [name, value] : node->attrs()) {
      proto::TensorBoardAttrValue converted;
      if (ConvertAttr(value, &converted)) {
        (*n->mutable_attr())[name] = std::move(converted);
      }
    }
    if (node->num_outputs() > 0) {
      auto* shapes = (*n->mutable_attr())["_output_shapes"].mutable_list();
      for (int i = 0; i < node->num_outputs(); ++i) {
        ConvertShape(node->output_shape(i), shapes->add_shape());
      }
    }
  }
  return out;
}

}  // namespace train
}  // namespace distflow
