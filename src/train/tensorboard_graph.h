// The graph in the form TensorBoard's graph view reads. distflow's GraphDef
// (proto/graph.proto) numbers its fields differently from TensorFlow's
// (AttrValue, the version and assigned_device fields), so the event file holds
// a converted copy: see proto/tensorboard_graph.proto.
#ifndef DISTFLOW_TRAIN_TENSORBOARD_GRAPH_H_
#define DISTFLOW_TRAIN_TENSORBOARD_GRAPH_H_

#include "graph/graph.h"
#include "proto/tensorboard_graph.pb.h"

namespace distflow {
namespace train {

// Every node of `graph` with its name, op, inputs ("node:k", "^node"), device
// (assigned if placed, else requested), its attributes except tensors (such
// as a Const's value, which TensorBoard does not need), and "_output_shapes"
// with the shapes inferred when the graph was built, which TensorBoard shows
// on the edges.
proto::TensorBoardGraphDef ToTensorBoardGraph(const Graph& graph);

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_TENSORBOARD_GRAPH_H_
