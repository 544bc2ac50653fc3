// Preparing a graph for one kind of call: only the nodes the call needs, with
// feeds entering as _Arg nodes and fetches leaving through _Retval nodes.
#ifndef DISTFLOW_GRAPH_SUBGRAPH_H_
#define DISTFLOW_GRAPH_SUBGRAPH_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"

namespace distflow {

// What a call feeds (endpoints "node:index"), fetches (endpoints) and runs
// (node names).
struct CallSignature {
  std::vector<std::string> feeds;
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
};

// A new graph holding the nodes of `graph` that the fetches and targets depend
// on, not looking past fed endpoints. Feed i becomes an _Arg with index i;
// fetch i is returned by a _Retval with index i. INVALID_ARGUMENT naming the
// endpoint for a feed, fetch or target that is not in the graph, or a feed
// listed twice.
absl::StatusOr<std::unique_ptr<Graph>> BuildCallGraph(
    const Graph& graph, const CallSignature& signature);

// Resolves "node:index" (or "node", index 0) to an output of a node in `graph`.
absl::StatusOr<Endpoint> FindEndpoint(const Graph& graph,
                                      const std::string& name);

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_SUBGRAPH_H_
