// Adds one node to a Scope's graph, applying the scope's name, device, control
// dependencies and colocation; records any error in the scope. Used by every op
// wrapper in graph/ops/.
#ifndef DISTFLOW_GRAPH_NODE_BUILDER_H_
#define DISTFLOW_GRAPH_NODE_BUILDER_H_

#include <string>
#include <vector>

#include "distflow/scope.h"
#include "graph/attr_value.h"
#include "graph/graph.h"

namespace distflow {

class NodeBuilder {
 public:
  // A node of op `op`, named after `default_name` unless the scope names it.
  NodeBuilder(const Scope& scope, std::string op,
              const std::string& default_name);

  NodeBuilder& Input(const Output& output);
  NodeBuilder& Input(const std::vector<Output>& list);
  NodeBuilder& ControlInput(const Operation& op);
  NodeBuilder& Attr(const std::string& name, proto::AttrValue value);
  template <typename T>
  NodeBuilder& Attr(const std::string& name, const T& value) {
    return Attr(name, MakeAttr(value));
  }

  // Adds the node. On error (now or earlier in the scope) records it in the
  // scope and returns an invalid Operation.
  Operation Finalize();

 private:
  Scope scope_;
  proto::NodeDef def_;
  absl::Status status_;
};

// A Const node holding `value`, named by the scope.
Output ConstNode(const Scope& scope, const Tensor& value);
// The Output for `input`: the Output itself, or a new Const node holding its
// value.
Output AsOutput(const Scope& scope, const Input& input);
// Outputs for inputs that must share one element type: number literals take the
// type of the first non-literal input (so Mul(s, x, 2) works for any numeric
// x).
std::vector<Output> AsOutputsOfOneType(const Scope& scope,
                                       const std::vector<Input>& inputs);
// The Output for `input`, a number literal taking `dtype` (for inputs of a
// fixed type: 0 passes as an int64 step).
Output AsOutputOfType(const Scope& scope, const Input& input, DataType dtype);

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_NODE_BUILDER_H_
