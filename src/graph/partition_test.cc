#include "graph/partition.h"

#include "distflow/ops.h"
#include "distflow/scope.h"
#include "graph/graph_def_io.h"
#include "graph/placer.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

int CountOps(const proto::GraphDef& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.node()) n += node.op() == op;
  return n;
}

TEST(PartitionTest, CutEdgesBecomeOneSendRecvPairPerOutputAndTask) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root.WithOpName("a").WithDevice("/job:ps/task:0"), 1.0f);
  // Two consumers of `a` on the worker: `a` crosses once.
  auto b = ops::Add(root.WithOpName("b"), a, a);
  auto c = ops::Mul(root.WithOpName("c"), a, b);
  // A control edge from the worker to the ps.
  ops::NoOp(root.WithOpName("after")
                .WithDevice("/job:ps/task:0")
                .WithControlDependencies({c.op()}));
  ASSERT_TRUE(root.ok());
  PlacementOptions placement;
  placement.jobs = {{"ps", 1}, {"worker", 1}};
  placement.default_job = "worker";
  ASSERT_TRUE(PlaceGraph(placement, root.graph()).ok());
  auto parts = PartitionGraph(*root.graph());
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 2u);
  const proto::GraphDef& ps = parts->at("/job:ps/replica:0/task:0");
  const proto::GraphDef& worker = parts->at("/job:worker/replica:0/task:0");
  EXPECT_EQ(CountOps(ps, "_Send"), 1);
  EXPECT_EQ(CountOps(worker, "_Recv"), 1);
  // The control edge: a dummy constant sent from the worker.
  EXPECT_EQ(CountOps(worker, "_Send"), 1);
  EXPECT_EQ(CountOps(ps, "_Recv"), 1);
  // Each partition stands on its own: it imports into an empty graph.
  for (const auto& [task, def] : *parts) {
    Graph g;
    EXPECT_TRUE(ImportGraphDef(def, &g).ok()) << task;
  }
}

}  // namespace
}  // namespace distflow
