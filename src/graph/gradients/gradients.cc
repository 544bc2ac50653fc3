// Reverse-mode differentiation over the graph: gradients flow from ys back to
// xs through the nodes that lie on a path between them, each node's gradient
// function running once all of its consumers on such paths have contributed.
#include "distflow/gradients.h"

#include <deque>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/gradients/grad_registry.h"
#include "graph/graph.h"
#include "graph/node_builder.h"

namespace distflow {

Output Gradient::ToDense(const Scope& scope) const {
  if (!is_sparse_) return dense_;
  // Rows that repeat add up, as the gradient of a lookup must.
  Output num_rows =
      ops::Reshape(scope,
                   NodeBuilder(scope, "Slice", "rows")
                       .Input(sparse_.dense_shape)
                       .Input(ops::Const(scope, Input({0})))
                       .Input(ops::Const(scope, Input({1})))
                       .Finalize()
                       .output(0),
                   ops::Const(scope, Input(Tensor::Vector<int32_t>({}))));
  return NodeBuilder(scope, "UnsortedSegmentSum", "dense_gradient")
      .Input(sparse_.values)
      .Input(sparse_.indices)
      .Input(num_rows)
      .Finalize()
      .output(0);
}

namespace {

struct EndpointHash {
  size_t operator()(const Output& o) const {
    return absl::HashOf(o.node(), o.index());
  }
};

class GradientBuilder {
 public:
  GradientBuilder(const Scope& scope, const GradientsOptions& options)
      : scope_(scope.NewSubScope("gradients")), options_(options) {}

  absl::StatusOr<std::vector<Gradient>> Build(
      const std::vector<Output>& ys, const std::vector<Output>& xs,
      const std::vector<Output>& grad_ys);

 private:
  // Marks the nodes on a path from some x to some y, and counts, for each, its
  // consumers among them (before any gradient op adds consumers).
  void FindPaths(const std::vector<Output>& ys, const std::vector<Output>& xs);
  // The sum of the gradients reaching `out`; invalid if none.
  absl::StatusOr<Gradient> SumGradients(const Scope& scope, const Output& out);
  absl::Status Backprop(Node* node);

  Scope scope_;
  GradientsOptions options_;
  absl::flat_hash_set<Node*> on_path_;
  absl::flat_hash_map<Node*, int> pending_;
  absl::flat_hash_map<Output, std::vector<Gradient>, EndpointHash> grads_;
  std::deque<Node*> ready_;
};

void GradientBuilder::FindPaths(const std::vector<Output>& ys,
                                const std::vector<Output>& xs) {
  // Nodes the ys depend on.
  absl::flat_hash_set<Node*> upstream;
  std::vector<Node*> stack;
  for (const Output& y : ys) stack.push_back(y.node());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (!upstream.insert(n).second) continue;
    for (const Endpoint& in : n->inputs()) stack.push_back(in.node);
  }
  // Of those, the ones that depend on some x.
  for (const Output& x : xs) stack.push_back(x.node());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (!upstream.contains(n) || !on_path_.insert(n).second) continue;
    for (const OutEdge& e : n->out_edges()) {
      if (!e.is_control()) stack.push_back(e.dst);
    }
  }
  for (Node* n : on_path_) {
    int consumers = 0;
    for (const OutEdge& e : n->out_edges()) {
      if (!e.is_control() && on_path_.contains(e.dst)) ++consumers;
    }
    pending_[n] = consumers;
  }
}

absl::StatusOr<Gradient> GradientBuilder::SumGradients(const Scope& scope,
                                                       const Output& out) {
  auto it = grads_.find(out);
  if (it == grads_.end() || it->second.empty()) return Gradient();
  std::vector<Gradient>& parts = it->second;
  if (parts.size() == 1) return parts[0];
  // A sum of several contributions is dense: a sparse one is densified first.
  Output sum = parts[0].ToDense(scope);
  for (size_t i = 1; i < parts.size(); ++i) {
    sum = ops::Add(scope, sum, parts[i].ToDense(scope));
  }
  DF_RETURN_IF_ERROR(scope.status());
  return Gradient(sum);
}

absl::Status GradientBuilder::Backprop(Node* node) {
  // A node whose inputs are all off the paths (such as an x itself) needs no
  // gradient function.
  bool any_input_on_path = false;
  for (const Endpoint& in : node->inputs()) {
    any_input_on_path |= on_path_.contains(in.node);
  }
  if (!any_input_on_path) return absl::OkStatus();

  DF_ASSIGN_OR_RETURN(GradFunc fn, GradRegistry::Global()->Lookup(node->op()));
  Operation op(node);
  if (!fn) {
    // Not differentiable: the inputs on a path get no contribution through it.
    for (const Endpoint& in : node->inputs()) {
      if (on_path_.contains(in.node) && --pending_[in.node] == 0) {
        ready_.push_back(in.node);
      }
    }
    return absl::OkStatus();
  }

  Scope scope = scope_.NewSubScope(node->name() + "_grad");
  if (options_.colocate_gradients_with_ops) scope = scope.ColocateWith(op);
  std::vector<Output> grad_outputs(node->num_outputs());
  for (int i = 0; i < node->num_outputs(); ++i) {
    DF_ASSIGN_OR_RETURN(Gradient g, SumGradients(scope, Output(node, i)));
    grad_outputs[i] = g.has_value() ? g.ToDense(scope)
                                    : ops::ZerosLike(scope, Output(node, i));
  }
  std::vector<Gradient> grad_inputs(node->num_inputs());
  absl::Status s = fn(scope, op, grad_outputs, &grad_inputs);
  if (s.ok()) s = scope.status();
  if (!s.ok()) {
    return AddErrorContext(
        s, absl::StrCat("building the gradient of ", node->DebugName()));
  }
  if (static_cast<int>(grad_inputs.size()) != node->num_inputs()) {
    return absl::InternalError(absl::StrCat(
        "the gradient function of op ", node->op(), " returned ",
        grad_inputs.size(), " gradients for ", node->num_inputs(), " inputs"));
  }
  for (int i = 0; i < node->num_inputs(); ++i) {
    const Endpoint& in = node->input(i);
    if (!on_path_.contains(in.node)) continue;
    if (grad_inputs[i].has_value()) {
      grads_[Output(in.node, in.index)].push_back(grad_inputs[i]);
    }
    if (--pending_[in.node] == 0) ready_.push_back(in.node);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Gradient>> GradientBuilder::Build(
    const std::vector<Output>& ys, const std::vector<Output>& xs,
    const std::vector<Output>& grad_ys) {
  if (!grad_ys.empty() && grad_ys.size() != ys.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Gradients: got ", grad_ys.size(), " grad_ys for ",
                     ys.size(), " ys; give one per y, or none"));
  }
  for (const std::vector<Output>* list : {&ys, &xs, &grad_ys}) {
    for (const Output& o : *list) {
      if (!o.valid()) {
        return absl::InvalidArgumentError(
            "Gradients: an invalid Output among ys, xs or grad_ys (check the "
            "scope's status for the error that made it)");
      }
    }
  }
  FindPaths(ys, xs);
  for (size_t i = 0; i < ys.size(); ++i) {
    if (!on_path_.contains(ys[i].node())) continue;
    Output g = grad_ys.empty() ? ops::OnesLike(scope_, ys[i]) : grad_ys[i];
    if (g.dtype() != ys[i].dtype()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Gradients: grad_ys[", i, "] ", g.name(), " is ",
                       DataTypeName(g.dtype()), " but ys[", i, "] ",
                       ys[i].name(), " is ", DataTypeName(ys[i].dtype())));
    }
    grads_[ys[i]].push_back(g);
  }
  // Only ys have no consumers on the paths; start from them in order, so that
  // the ops built (and their names) do not depend on hashing.
  absl::flat_hash_set<Node*> started;
  for (const Output& y : ys) {
    Node* n = y.node();
    if (on_path_.contains(n) && pending_[n] == 0 && started.insert(n).second) {
      ready_.push_back(n);
    }
  }
  while (!ready_.empty()) {
    Node* n = ready_.front();
    ready_.pop_front();
    DF_RETURN_IF_ERROR(Backprop(n));
  }
  std::vector<Gradient> result;
  for (const Output& x : xs) {
    DF_ASSIGN_OR_RETURN(Gradient g, SumGradients(scope_, x));
    result.push_back(g);
  }
  DF_RETURN_IF_ERROR(scope_.status());
  return result;
}

}  // namespace

absl::StatusOr<std::vector<Gradient>> Gradients(
    const Scope& scope, const std::vector<Output>& ys,
    const std::vector<Output>& xs, const std::vector<Output>& grad_ys,
    const GradientsOptions& options) {
  DF_RETURN_IF_ERROR(scope.status());
  return GradientBuilder(scope, options).Build(ys, xs, grad_ys);
}

}  // namespace distflow
