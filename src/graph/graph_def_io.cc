#include "graph/graph_def_io.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace distflow {
namespace {

// The most node outputs one GraphDef may bring.
constexpr int64_t kMaxImportedOutputs = int64_t{1} << 22;

// One node of a cycle, and the walk back around it, for the error message.
std::string DescribeCycle(const proto::GraphDef& def,
                          const std::vector<int>& remaining_inputs,
                          const absl::flat_hash_map<std::string, int>& index) {
  // Every node left has an unresolved input among the nodes left: follow those
  // until one repeats.
  int start = -1;
  for (int i = 0; i < def.node_size(); ++i) {
    if (remaining_inputs[i] > 0) {
      start = i;
      break;
    }
  }
  std::vector<int> path;
  std::vector<int> position(def.node_size(), -1);
  int current = start;
  while (current >= 0 && position[current] < 0) {
    position[current] = static_cast<int>(path.size());
    path.push_back(current);
    int next = -1;
    for (const std::string& in : def.node(current).input()) {
      auto parsed = ParseInputName(in);
      if (!parsed.ok()) continue;
      auto it = index.find(parsed->node);
      if (it != index.end() && remaining_inputs[it->second] > 0) {
        next = it->second;
        break;
      }
    }
    current = next;
  }
  std::vector<std::string> names;
  if (current >= 0) {
    for (size_t i = position[current]; i < path.size(); ++i) {
      names.push_back(def.node(path[i]).name());
    }
    names.push_back(def.node(current).name());
  }
  // The walk follows inputs (consumer -> producer); print it in data-flow
  // order.
  std::reverse(names.begin(), names.end());
  return absl::StrJoin(names, " -> ");
}

}  // namespace

absl::Status ImportGraphDef(const proto::GraphDef& def, Graph* graph) {
  if (def.version() > kGraphDefVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("GraphDef version ", def.version(),
                     " is newer than this build of distflow "
                     "reads (",
                     kGraphDefVersion, "); upgrade distflow"));
  }
  const int n = def.node_size();
  absl::flat_hash_map<std::string, int> index;
  for (int i = 0; i < n; ++i) {
    const std::string& name = def.node(i).name();
    if (!index.emplace(name, i).second || graph->FindNode(name) != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("GraphDef has two nodes named '", name, "'"));
    }
  }
  // Kahn's algorithm over the GraphDef's own nodes; inputs already in `graph`
  // are resolved.
  std::vector<int> remaining_inputs(n, 0);
  std::vector<std::vector<int>> consumers(n);
  for (int i = 0; i < n; ++i) {
    for (const std::string& in : def.node(i).input()) {
      auto parsed = ParseInputName(in);
      if (!parsed.ok()) {
        return AddErrorContext(parsed.status(),
                               absl::StrCat("node '", def.node(i).name(), "'"));
      }
      auto it = index.find(parsed->node);
      if (it == index.end()) {
        if (graph->FindNode(parsed->node) != nullptr) continue;
        return absl::InvalidArgumentError(absl::StrCat(
            def.node(i).op(), " '", def.node(i).name(), "': input '", in,
            "' names node '", parsed->node, "', which is not in the graph"));
      }
      ++remaining_inputs[i];
      consumers[it->second].push_back(i);
    }
  }
  // The ready node listed first goes next, so a GraphDef already in topological
  // order (such as one from Graph::ToGraphDef) is added in its own order and
  // round-trips unchanged.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i) {
    if (remaining_inputs[i] == 0) ready.push(i);
  }
  int added = 0;
  int64_t outputs = 0;
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    DF_ASSIGN_OR_RETURN(Node * node, graph->AddNode(def.node(i)));
    ++added;
    // Each output costs memory in the graph and in every step: a GraphDef
    // from anywhere gets a budget, not only each node (Graph::AddNode).
    outputs += node->num_outputs();
    if (outputs > kMaxImportedOutputs) {
      return absl::InvalidArgumentError(absl::StrCat(
          "GraphDef has more than ", kMaxImportedOutputs, " outputs in all (",
          node->DebugName(), " brings it to ", outputs, ")"));
    }
    for (int c : consumers[i]) {
      if (--remaining_inputs[c] == 0) ready.push(c);
    }
  }
  if (added < n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GraphDef has a cycle: ", DescribeCycle(def, remaining_inputs, index),
        "; a dataflow graph must be acyclic"));
  }
  return absl::OkStatus();
}

}  // namespace distflow
