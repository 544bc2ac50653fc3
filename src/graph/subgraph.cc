#include "graph/subgraph.h"

#include <map>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "graph/graph_def_io.h"

namespace distflow {

absl::StatusOr<Endpoint> FindEndpoint(const Graph& graph,
                                      const std::string& name) {
  DF_ASSIGN_OR_RETURN(ParsedInput parsed, ParseInputName(name));
  if (parsed.is_control) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name,
                     "' is a control input; feeds and fetches name outputs "
                     "such as 'node:0'"));
  }
  Node* node = graph.FindNode(parsed.node);
  if (node == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", name, "': the graph has no node named '", parsed.node, "'"));
  }
  if (parsed.index >= node->num_outputs()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name, "': ", node->DebugName(), " has ",
                     node->num_outputs(), " outputs"));
  }
  return Endpoint{node, parsed.index};
}

absl::StatusOr<std::unique_ptr<Graph>> BuildCallGraph(
    const Graph& graph, const CallSignature& signature) {
  // Resolve every name first, so that errors name what the caller wrote.
  std::map<std::pair<int, int>, int>
      feed_index;  // (node id, output) -> feed position
  std::vector<Endpoint> feeds, fetches;
  for (size_t i = 0; i < signature.feeds.size(); ++i) {
    auto e = FindEndpoint(graph, signature.feeds[i]);
    if (!e.ok()) return AddErrorContext(e.status(), "feed");
    if (!feed_index.emplace(std::make_pair(e->node->id(), e->index), i)
             .second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "feed '", signature.feeds[i], "' is listed more than once"));
    }
    feeds.push_back(*e);
  }
  for (const std::string& name : signature.fetches) {
    auto e = FindEndpoint(graph, name);
    if (!e.ok()) return AddErrorContext(e.status(), "fetch");
    fetches.push_back(*e);
  }
  std::vector<Node*> stack;
  for (const Endpoint& e : fetches) {
    if (!feed_index.count({e.node->id(), e.index})) stack.push_back(e.node);
  }
  for (const std::string& name : signature.targets) {
    Node* node = graph.FindNode(name);
    if (node == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "target '", name, "': the graph has no node named '", name, "'"));
    }
    stack.push_back(node);
  }

  // Walk back from what is needed, not past fed endpoints.
  std::vector<bool> needed(graph.num_nodes(), false);
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (needed[n->id()]) continue;
    needed[n->id()] = true;
    for (const Endpoint& in : n->inputs()) {
      if (!feed_index.count({in.node->id(), in.index}))
        stack.push_back(in.node);
    }
    for (Node* c : n->control_inputs()) stack.push_back(c);
  }

  // Names for the inserted nodes that no node of the graph, nor another
  // inserted node, uses
  // ("a/b:0" and "a_b:0" both flatten to "a_b_0").
  absl::flat_hash_set<std::string> inserted;
  auto fresh_name = [&graph, &inserted](const std::string& base) {
    std::string name = base;
    for (int k = 1; graph.FindNode(name) != nullptr || inserted.contains(name);
         ++k) {
      name = absl::StrCat(base, "_", k);
    }
    inserted.insert(name);
    return name;
  };
  auto endpoint_tag = [](const Endpoint& e) {
    return absl::StrCat(absl::StrReplaceAll(e.node->name(), {{"/", "_"}}), "_",
                        e.index);
  };

  proto::GraphDef def;
  def.set_version(kGraphDefVersion);
  std::vector<std::string> arg_names;
  for (size_t i = 0; i < feeds.size(); ++i) {
    const Endpoint& e = feeds[i];
    proto::NodeDef* arg = def.add_node();
    arg->set_name(fresh_name(absl::StrCat("_arg_", endpoint_tag(e))));
    arg->set_op("_Arg");
    arg->set_device(e.node->requested_device());
    arg->set_assigned_device(e.node->assigned_device());
    (*arg->mutable_attr())["T"] = MakeAttr(e.node->output_type(e.index));
    (*arg->mutable_attr())["index"] = MakeAttr(static_cast<int64_t>(i));
    (*arg->mutable_attr())["shape"] = MakeAttr(e.node->output_shape(e.index));
    arg_names.push_back(arg->name());
  }
  for (const auto& node : graph.nodes()) {
    if (!needed[node->id()]) continue;
    proto::NodeDef* copy = def.add_node();
    *copy = node->def();
    copy->clear_input();
    for (const Endpoint& in : node->inputs()) {
      auto fed = feed_index.find({in.node->id(), in.index});
      if (fed != feed_index.end()) {
        copy->add_input(arg_names[fed->second]);
      } else {
        copy->add_input(absl::StrCat(in.node->name(), ":", in.index));
      }
    }
    for (Node* c : node->control_inputs())
      copy->add_input(absl::StrCat("^", c->name()));
  }
  for (size_t i = 0; i < fetches.size(); ++i) {
    const Endpoint& e = fetches[i];
    proto::NodeDef* ret = def.add_node();
    ret->set_name(
        fresh_name(absl::StrCat("_retval_", endpoint_tag(e), "_", i)));
    ret->set_op("_Retval");
    auto fed = feed_index.find({e.node->id(), e.index});
    ret->add_input(fed != feed_index.end()
                       ? arg_names[fed->second]
                       : absl::StrCat(e.node->name(), ":", e.index));
    ret->set_device(e.node->requested_device());
    ret->set_assigned_device(e.node->assigned_device());
    (*ret->mutable_attr())["T"] = MakeAttr(e.node->output_type(e.index));
    (*ret->mutable_attr())["index"] = MakeAttr(static_cast<int64_t>(i));
  }

  auto result = std::make_unique<Graph>(graph.registry());
  DF_RETURN_IF_ERROR(ImportGraphDef(def, result.get()));
  return result;
}

}  // namespace distflow
