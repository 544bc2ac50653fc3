// Placement: gives every node of a graph a full device name
// ("/job:J/replica:0/task:T/device:CPU:0") on a cluster.
#ifndef DISTFLOW_GRAPH_PLACER_H_
#define DISTFLOW_GRAPH_PLACER_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "graph/graph.h"

namespace distflow {

struct PlacementOptions {
  // The cluster: job name -> number of tasks.
  std::map<std::string, int> jobs;
  // Where nodes that request no job go (the master's own task); a node that
  // names the default job but no task goes to the default task, one naming
  // another job but no task to that job's task 0.
  std::string default_job;
  int default_task = 0;
};

// Sets the assigned device of every node of `graph`. The requested device
// (partial names allowed) is honored; nodes of one colocation group (the
// "_class" attribute, ["loc:@other_node"]) and a node and the producer of a
// resource it takes (a variable and the ops that read or update it) share one
// device. INVALID_ARGUMENT naming the node(s) and device for conflicting
// requests in a group, a device type other than CPU:0, or a job or task the
// cluster lacks (listing the cluster's jobs).
absl::Status PlaceGraph(const PlacementOptions& options, Graph* graph);

// "/job:J/replica:R/task:T" of a full device name (the task that runs it).
std::string TaskOfDevice(const std::string& device);

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_PLACER_H_
