// Partitioning: splits a placed graph into one graph per task.
#ifndef DISTFLOW_GRAPH_PARTITION_H_
#define DISTFLOW_GRAPH_PARTITION_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "proto/graph.pb.h"

namespace distflow {

// One GraphDef per task ("/job:J/replica:0/task:T") that runs a node of
// `graph`, whose nodes must all have an assigned device (graph/placer.h).
// Every edge between tasks is cut: the producer's task gets a _Send and the
// consumer's a _Recv, both naming the edge (the rendezvous key). An output
// needed on another task by several nodes crosses once; a control edge
// crosses as a scalar sent after the source node ran, and a node's control
// edges from several nodes of one other task cross as one (sent once all of
// them ran). Partition nodes keep
// their names and assigned devices; added nodes start with "_df_".
absl::StatusOr<std::map<std::string, proto::GraphDef>> PartitionGraph(
    const Graph& graph);

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_PARTITION_H_
