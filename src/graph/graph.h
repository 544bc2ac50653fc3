// The dataflow graph: nodes (op instances) joined by data and control edges.
//
// A Graph is built single-threaded; once built it may be read from many
// threads. Every node is validated when added (its op exists, attributes and
// input types fit the op, shapes agree), so a Graph is always well-formed and
// acyclic: a node's inputs must already be in the graph.
#ifndef DISTFLOW_GRAPH_GRAPH_H_
#define DISTFLOW_GRAPH_GRAPH_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "distflow/tensor.h"
#include "distflow/tensor_shape.h"
#include "graph/op_def.h"
#include "graph/op_registry.h"
#include "proto/graph.pb.h"

namespace distflow {

class Node;

// An output of a node: the `index`-th output of `node`.
struct Endpoint {
  Node* node = nullptr;
  int index = 0;
};

// An edge leaving a node: data (from output `src_output` into input `dst_input`
// of `dst`) or control (both indices kControlSlot).
struct OutEdge {
  static constexpr int kControlSlot = -1;
  Node* dst = nullptr;
  int src_output = kControlSlot;
  int dst_input = kControlSlot;
  bool is_control() const { return dst_input == kControlSlot; }
};

class Node {
 public:
  int id() const { return id_; }
  const std::string& name() const { return def_.name(); }
  const std::string& op() const { return def_.op(); }
  const OpDef& op_def() const { return *op_def_; }
  // The NodeDef as added (attributes completed with defaults; inputs as names).
  const proto::NodeDef& def() const { return def_; }
  const AttrMap& attrs() const { return def_.attr(); }

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return static_cast<int>(output_types_.size()); }
  const Endpoint& input(int i) const { return inputs_[i]; }
  const std::vector<Endpoint>& inputs() const { return inputs_; }
  const std::vector<Node*>& control_inputs() const { return control_inputs_; }
  const std::vector<OutEdge>& out_edges() const { return out_edges_; }
  DataType input_type(int i) const { return input_types_[i]; }
  DataType output_type(int i) const { return output_types_[i]; }
  const std::vector<DataType>& output_types() const { return output_types_; }
  const PartialTensorShape& output_shape(int i) const {
    return output_shapes_[i];
  }

  // The device the user asked for (possibly partial); may be empty.
  const std::string& requested_device() const { return def_.device(); }
  void set_requested_device(const std::string& device) {
    def_.set_device(device);
  }
  // The device the placer chose; empty before placement.
  const std::string& assigned_device() const { return def_.assigned_device(); }
  void set_assigned_device(const std::string& device) {
    def_.set_assigned_device(device);
  }
  // Sets or replaces an attribute that needs no validation against the op (such
  // as "_class").
  void SetInternalAttr(const std::string& name, proto::AttrValue value);

  bool is_stateful() const { return op_def_->is_stateful; }
  // The value of a Const node, decoded once; nullptr for other ops.
  const Tensor* constant_value() const {
    return has_constant_ ? &constant_ : nullptr;
  }

  // "MatMul 'product'": how error messages name a node.
  std::string DebugName() const;

 private:
  friend class Graph;
  Node() = default;

  int id_ = -1;
  proto::NodeDef def_;
  const OpDef* op_def_ = nullptr;
  std::vector<Endpoint> inputs_;
  std::vector<Node*> control_inputs_;
  std::vector<OutEdge> out_edges_;
  std::vector<DataType> input_types_;
  std::vector<DataType> output_types_;
  std::vector<PartialTensorShape> output_shapes_;
  bool has_constant_ = false;
  Tensor constant_;
};

class Graph {
 public:
  explicit Graph(const OpRegistry* registry = OpRegistry::Global());
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Validates `def` and adds it. Inputs ("node", "node:1", "^node") must name
  // nodes already in the graph. Type attributes left unset are inferred from
  // the inputs; missing attributes take their defaults; output shapes are
  // inferred. Errors are INVALID_ARGUMENT (NOT_FOUND for an unknown op) and
  // name the node, its op and, for shape errors, the shapes.
  absl::StatusOr<Node*> AddNode(proto::NodeDef def);

  // Adds a control edge src -> dst; INVALID_ARGUMENT naming both if it would
  // create a cycle.
  absl::Status AddControlEdge(Node* src, Node* dst);

  // Removes the nodes with id >= num_nodes (the most recently added) and their
  // edges: undoes a partly failed batch of AddNode calls.
  void TruncateTo(int num_nodes);

  Node* FindNode(const std::string& name) const;
  // Nodes in the order they were added (a topological order); index == id.
  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const OpRegistry* registry() const { return registry_; }

  // A name not yet used in this graph: `base` itself if free, else base_1,
  // base_2, ...
  std::string UniqueName(const std::string& base);

  // Appends every node, in id order, to `out` (which is cleared first).
  void ToGraphDef(proto::GraphDef* out) const;
  // Appends nodes with id >= first_id: what a session must add to a graph it
  // has seen up to first_id.
  void ToGraphDefSince(int first_id, proto::GraphDef* out) const;

  // Named lists of node names that build APIs share, such as the variable
  // initializers.
  void AddToCollection(const std::string& key, const std::string& node_name);
  const std::vector<std::string>& GetCollection(const std::string& key) const;

 private:
  absl::Status ResolveInputs(Node* node);
  absl::Status InferTypes(Node* node);
  absl::Status InferShapes(Node* node);
  bool Reaches(const Node* from, const Node* to) const;

  const OpRegistry* registry_;
  std::vector<std::unique_ptr<Node>> nodes_;
  absl::flat_hash_map<std::string, Node*> by_name_;
  absl::flat_hash_map<std::string, int> name_counters_;
  std::map<std::string, std::vector<std::string>> collections_;
};

// Parses an input string: "x" -> ("x", 0), "x:2" -> ("x", 2), "^x" -> ("x",
// control).
struct ParsedInput {
  std::string node;
  int index = 0;
  bool is_control = false;
};
absl::StatusOr<ParsedInput> ParseInputName(const std::string& input);

// Collection keys.
inline constexpr char kVariableInitializersCollection[] =
    "variable_initializers";
inline constexpr char kGlobalVariablesCollection[] = "global_variables";
// The variables optimizers update by default (a subset of the global ones).
inline constexpr char kTrainableVariablesCollection[] = "trainable_variables";

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_GRAPH_H_
