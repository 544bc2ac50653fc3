#include "graph/graph.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "graph/shape_inference.h"

namespace distflow {
namespace {

// The most outputs one node may have (its list outputs counted in full).
constexpr int64_t kMaxNodeOutputs = int64_t{1} << 16;

bool ValidNodeName(const std::string& name) {
  if (name.empty()) return false;
  const char first = name[0];
  if (!(std::isalnum(static_cast<unsigned char>(first)) || first == '.' ||
        first == '_')) {
    return false;
  }
  for (char ch : name) {
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' ||
          ch == '.' || ch == '/' || ch == '-')) {
      return false;
    }
  }
  return true;
}

std::string EndpointName(const Endpoint& e) {
  return e.index == 0 ? e.node->name()
                      : absl::StrCat(e.node->name(), ":", e.index);
}

}  // namespace

absl::StatusOr<ParsedInput> ParseInputName(const std::string& input) {
  ParsedInput parsed;
  absl::string_view s = input;
  if (!s.empty() && s[0] == '^') {
    parsed.is_control = true;
    parsed.index = OutEdge::kControlSlot;
    s.remove_prefix(1);
  } else if (auto colon = s.rfind(':'); colon != absl::string_view::npos) {
    if (!absl::SimpleAtoi(s.substr(colon + 1), &parsed.index) ||
        parsed.index < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", input,
                       "' has a bad output index; expected node or node:N"));
    }
    s = s.substr(0, colon);
  }
  if (s.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", input, "' names no node"));
  }
  parsed.node = std::string(s);
  return parsed;
}

std::string Node::DebugName() const {
  return absl::StrCat(op(), " '", name(), "'");
}

void Node::SetInternalAttr(const std::string& name, proto::AttrValue value) {
  (*def_.mutable_attr())[name] = std::move(value);
}

Graph::Graph(const OpRegistry* registry) : registry_(registry) {}

Node* Graph::FindNode(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::string Graph::UniqueName(const std::string& base) {
  if (!by_name_.contains(base) && !name_counters_.contains(base)) {
    name_counters_[base] = 0;
    return base;
  }
  int& counter = name_counters_[base];
  std::string name;
  do {
    name = absl::StrCat(base, "_", ++counter);
  } while (by_name_.contains(name));
  return name;
}

absl::StatusOr<Node*> Graph::AddNode(proto::NodeDef def) {
  auto node = absl::WrapUnique(new Node());
  const std::string label = absl::StrCat(def.op(), " '", def.name(), "'");
  if (!ValidNodeName(def.name())) {
    return absl::InvalidArgumentError(
        absl::StrCat(label,
                     ": invalid node name; use letters, digits and _ . / - "
                     "(not starting with / or -)"));
  }
  if (by_name_.contains(def.name())) {
    return absl::InvalidArgumentError(absl::StrCat(
        label, ": a node named '", def.name(), "' is already in the graph"));
  }
  auto op_def = registry_->LookUp(def.op());
  if (!op_def.ok())
    return AddErrorContext(op_def.status(),
                           absl::StrCat("node '", def.name(), "'"));
  node->op_def_ = *op_def;
  node->def_ = std::move(def);

  auto with_label = [&](const absl::Status& s) {
    return AddErrorContext(s, label);
  };
  absl::Status s = ResolveInputs(node.get());
  if (s.ok()) s = InferTypes(node.get());
  if (s.ok() && node->op() == "Const") {
    s = GetAttr(node->attrs(), "value", &node->constant_);
    node->has_constant_ = s.ok();
  }
  if (s.ok()) s = InferShapes(node.get());
  if (!s.ok()) return with_label(s);

  Node* raw = node.get();
  raw->id_ = static_cast<int>(nodes_.size());
  for (int i = 0; i < raw->num_inputs(); ++i) {
    const Endpoint& in = raw->inputs_[i];
    in.node->out_edges_.push_back(OutEdge{raw, in.index, i});
  }
  for (Node* c : raw->control_inputs_) {
    c->out_edges_.push_back(
        OutEdge{raw, OutEdge::kControlSlot, OutEdge::kControlSlot});
  }
  by_name_[raw->name()] = raw;
  nodes_.push_back(std::move(node));
  return raw;
}

absl::Status Graph::ResolveInputs(Node* node) {
  proto::NodeDef& def = node->def_;
  bool seen_control = false;
  for (int i = 0; i < def.input_size(); ++i) {
    DF_ASSIGN_OR_RETURN(ParsedInput in, ParseInputName(def.input(i)));
    Node* src = FindNode(in.node);
    if (src == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", def.input(i), "' names node '", in.node,
                       "', which is not in the graph (inputs must be added "
                       "before their users)"));
    }
    if (in.is_control) {
      seen_control = true;
      if (std::find(node->control_inputs_.begin(), node->control_inputs_.end(),
                    src) == node->control_inputs_.end()) {
        node->control_inputs_.push_back(src);
      }
      continue;
    }
    if (seen_control) {
      return absl::InvalidArgumentError(
          absl::StrCat("data input '", def.input(i),
                       "' follows a control input; list data inputs first"));
    }
    if (in.index >= src->num_outputs()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", def.input(i), "': ", src->DebugName(),
                       " has only ", src->num_outputs(), " outputs"));
    }
    node->inputs_.push_back(Endpoint{src, in.index});
  }
  // Normalize the recorded names ("x:0" -> "x", duplicate controls dropped).
  def.clear_input();
  for (const Endpoint& e : node->inputs_) def.add_input(EndpointName(e));
  for (Node* c : node->control_inputs_)
    def.add_input(absl::StrCat("^", c->name()));
  return absl::OkStatus();
}

absl::Status Graph::InferTypes(Node* node) {
  const OpDef& op = *node->op_def_;
  AttrMap& attrs = *node->def_.mutable_attr();

  // Every attribute given must be one the op declares (names starting with '_'
  // are internal), of the declared kind.
  for (const auto& [name, value] : attrs) {
    if (!name.empty() && name[0] == '_') continue;
    const AttrDef* attr_def = op.FindAttr(name);
    if (attr_def == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("op ", op.name, " has no attribute '", name, "'"));
    }
    DF_ASSIGN_OR_RETURN(AttrType kind, AttrTypeOf(value));
    const bool empty_list = value.value_case() == proto::AttrValue::kList &&
                            attr_def->type >= AttrType::kIntList;
    if (kind != attr_def->type && !empty_list) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attribute '", name, "' must be ", AttrTypeName(attr_def->type),
          ", got ", AttrTypeName(kind)));
    }
  }

  // List arguments whose length attribute is unset take the inputs that single
  // arguments leave.
  int single_inputs = 0, unsized_lists = 0;
  for (const ArgDef& arg : op.inputs) {
    if (arg.number_attr.empty()) {
      ++single_inputs;
    } else if (!attrs.contains(arg.number_attr)) {
      ++unsized_lists;
    }
  }
  if (unsized_lists == 1) {
    int64_t sized = 0;
    for (const ArgDef& arg : op.inputs) {
      if (!arg.number_attr.empty() && attrs.contains(arg.number_attr)) {
        // Any count beyond the inputs given fails below; only the sum must
        // not overflow on the way.
        sized = std::min<int64_t>(
            sized + std::clamp<int64_t>(attrs.at(arg.number_attr).i(), 0,
                                        node->num_inputs()),
            node->num_inputs() + int64_t{1});
      }
    }
    for (const ArgDef& arg : op.inputs) {
      if (!arg.number_attr.empty() && !attrs.contains(arg.number_attr)) {
        attrs[arg.number_attr] = MakeAttr(static_cast<int64_t>(
            std::max<int64_t>(0, node->num_inputs() - single_inputs - sized)));
      }
    }
  }

  // Walk the input arguments, binding type attributes from the first input that
  // sets them.
  std::map<std::string, int>
      attr_set_by;  // type attr -> input index that set it
  int next = 0;
  for (const ArgDef& arg : op.inputs) {
    int64_t count = 1;
    if (!arg.number_attr.empty()) {
      DF_RETURN_IF_ERROR(GetAttr(attrs, arg.number_attr, &count));
    }
    for (int64_t k = 0; k < count; ++k, ++next) {
      if (next >= node->num_inputs()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "expects ", "input '", arg.name, "' but was given only ",
            node->num_inputs(), " inputs"));
      }
      const DataType actual =
          node->inputs_[next].node->output_type(node->inputs_[next].index);
      DataType expected = arg.type;
      std::string because;
      if (!arg.type_attr.empty()) {
        if (!attrs.contains(arg.type_attr)) {
          attrs[arg.type_attr] = MakeAttr(actual);
          attr_set_by[arg.type_attr] = next;
        }
        DF_RETURN_IF_ERROR(GetAttr(attrs, arg.type_attr, &expected));
        auto by = attr_set_by.find(arg.type_attr);
        because =
            by != attr_set_by.end()
                ? absl::StrCat(" (attribute ", arg.type_attr, ", set by input ",
                               by->second, " '",
                               EndpointName(node->inputs_[by->second]), "')")
                : absl::StrCat(" (attribute ", arg.type_attr, ")");
      }
      if (actual != expected) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input ", next, " ('", EndpointName(node->inputs_[next]), "') is ",
            DataTypeName(actual), " but input '", arg.name, "' must be ",
            DataTypeName(expected), because));
      }
      node->input_types_.push_back(actual);
    }
  }
  if (next != node->num_inputs()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "takes ", next, " inputs but was given ", node->num_inputs()));
  }

  // Defaults, then check that every attribute is present and allowed.
  for (const AttrDef& a : op.attrs) {
    if (!attrs.contains(a.name)) {
      if (!a.default_value) {
        return absl::InvalidArgumentError(
            absl::StrCat("attribute '", a.name, "' (", AttrTypeName(a.type),
                         ") is missing"));
      }
      attrs[a.name] = *a.default_value;
    }
    if (a.type == AttrType::kType) {
      DataType t;
      DF_RETURN_IF_ERROR(GetAttr(attrs, a.name, &t));
      if (!a.allowed_types.empty() &&
          std::find(a.allowed_types.begin(), a.allowed_types.end(), t) ==
              a.allowed_types.end()) {
        std::vector<std::string> names;
        for (DataType d : a.allowed_types) names.push_back(DataTypeName(d));
        return absl::InvalidArgumentError(absl::StrCat(
            "attribute '", a.name, "' is ", DataTypeName(t),
            " but the op supports only ", absl::StrJoin(names, ", ")));
      }
    }
    if (a.minimum) {
      int64_t v;
      DF_RETURN_IF_ERROR(GetAttr(attrs, a.name, &v));
      if (v < *a.minimum) {
        return absl::InvalidArgumentError(absl::StrCat(
            "attribute '", a.name, "' is ", v, " but must be >= ", *a.minimum));
      }
    }
  }

  for (const ArgDef& arg : op.outputs) {
    int64_t count = 1;
    if (!arg.number_attr.empty())
      DF_RETURN_IF_ERROR(GetAttr(attrs, arg.number_attr, &count));
    // The count sizes vectors here, in shape inference and in every step:
    // a GraphDef from anywhere must not make one small node cost gigabytes.
    if (count < 0 ||
        count > kMaxNodeOutputs -
                    static_cast<int64_t>(node->output_types_.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attribute '", arg.number_attr, "' is ", count, ": output list '",
          arg.name, "' must have between 0 and ", kMaxNodeOutputs,
          " entries in all"));
    }
    DataType t = arg.type;
    if (!arg.type_attr.empty())
      DF_RETURN_IF_ERROR(GetAttr(attrs, arg.type_attr, &t));
    for (int64_t k = 0; k < count; ++k) node->output_types_.push_back(t);
  }
  return absl::OkStatus();
}

absl::Status Graph::InferShapes(Node* node) {
  std::vector<PartialTensorShape> shapes, handle_shapes;
  std::vector<const Tensor*> values;
  for (const Endpoint& in : node->inputs_) {
    shapes.push_back(in.node->output_shape(in.index));
    values.push_back(in.node->constant_value());
    // A resource handle made by an op with a "shape" attribute (a variable)
    // carries that shape.
    PartialTensorShape handle_shape;
    if (in.node->output_type(in.index) == DataType::kResource) {
      (void)GetAttr(in.node->attrs(), "shape", &handle_shape);
    }
    handle_shapes.push_back(handle_shape);
  }
  InferenceContext ctx(&node->def_.attr(), std::move(shapes),
                       node->input_types_, std::move(values),
                       node->num_outputs());
  ctx.set_input_handle_shapes(std::move(handle_shapes));
  if (node->op_def_->shape_fn) {
    DF_RETURN_IF_ERROR(node->op_def_->shape_fn(&ctx));
  } else {
    DF_RETURN_IF_ERROR(shape_fns::Unknown(&ctx));
  }
  node->output_shapes_ = ctx.TakeOutputs();
  // An output whose shape is known here must be one a tensor can have: a
  // graph that asks for Fill of [2^40, 2^40] fails when it is built, not
  // in the middle of a step.
  for (int i = 0; i < node->num_outputs(); ++i) {
    const PartialTensorShape& shape = node->output_shapes_[i];
    if (!shape.IsFullyDefined()) continue;
    absl::Status s = shape.AsTensorShape().status();
    if (s.ok()) {
      s = TensorByteSize(node->output_types_[i], *shape.AsTensorShape())
              .status();
    }
    if (!s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output ", i, " would be ", DataTypeName(node->output_types_[i]),
          shape.DebugString(), ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

void Graph::TruncateTo(int num_nodes) {
  if (num_nodes >= static_cast<int>(nodes_.size())) return;
  for (int id = num_nodes; id < static_cast<int>(nodes_.size()); ++id) {
    by_name_.erase(nodes_[id]->name());
  }
  // Only older nodes can feed the removed ones; drop their edges into them.
  for (int id = 0; id < num_nodes; ++id) {
    auto& edges = nodes_[id]->out_edges_;
    edges.erase(std::remove_if(edges.begin(), edges.end(),
                               [num_nodes](const OutEdge& e) {
                                 return e.dst->id() >= num_nodes;
                               }),
                edges.end());
  }
  nodes_.resize(num_nodes);
}

bool Graph::Reaches(const Node* from, const Node* to) const {
  std::vector<const Node*> stack = {from};
  std::vector<bool> seen(nodes_.size(), false);
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (n == to) return true;
    if (seen[n->id()]) continue;
    seen[n->id()] = true;
    for (const OutEdge& e : n->out_edges()) stack.push_back(e.dst);
  }
  return false;
}

absl::Status Graph::AddControlEdge(Node* src, Node* dst) {
  if (src == dst || Reaches(dst, src)) {
    return absl::InvalidArgumentError(
        absl::StrCat("control edge from ", src->DebugName(), " to ",
                     dst->DebugName(), " would create a cycle"));
  }
  if (std::find(dst->control_inputs_.begin(), dst->control_inputs_.end(),
                src) != dst->control_inputs_.end()) {
    return absl::OkStatus();
  }
  dst->control_inputs_.push_back(src);
  dst->def_.add_input(absl::StrCat("^", src->name()));
  src->out_edges_.push_back(
      OutEdge{dst, OutEdge::kControlSlot, OutEdge::kControlSlot});
  return absl::OkStatus();
}

void Graph::ToGraphDef(proto::GraphDef* out) const {
  out->Clear();
  ToGraphDefSince(0, out);
}

void Graph::ToGraphDefSince(int first_id, proto::GraphDef* out) const {
  out->set_version(1);
  for (size_t i = std::max(0, first_id); i < nodes_.size(); ++i) {
    *out->add_node() = nodes_[i]->def();
  }
}

void Graph::AddToCollection(const std::string& key,
                            const std::string& node_name) {
  collections_[key].push_back(node_name);
}

const std::vector<std::string>& Graph::GetCollection(
    const std::string& key) const {
  static const std::vector<std::string> kEmpty;
  auto it = collections_.find(key);
  return it == collections_.end() ? kEmpty : it->second;
}

}  // namespace distflow
