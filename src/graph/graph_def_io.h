// Importing a GraphDef (from a client, a file or the network) into a Graph.
#ifndef DISTFLOW_GRAPH_GRAPH_DEF_IO_H_
#define DISTFLOW_GRAPH_GRAPH_DEF_IO_H_

#include "absl/status/status.h"
#include "graph/graph.h"
#include "proto/graph.pb.h"

namespace distflow {

// The newest GraphDef version this build reads and writes.
inline constexpr int kGraphDefVersion = 1;

// Adds every node of `def` to `graph`, in an order where inputs come first (the
// GraphDef may list them in any order; its inputs may also name nodes already
// in `graph`). Everything is validated as Graph::AddNode does. INVALID_ARGUMENT
// naming the node for a missing input, a duplicate name or a cycle (listing the
// nodes on it); on error `graph` may hold some of the nodes.
absl::Status ImportGraphDef(const proto::GraphDef& def, Graph* graph);

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_GRAPH_DEF_IO_H_
