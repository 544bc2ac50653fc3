#include "graph/partition.h"

#include <map>
#include <string>

#include "distflow/ops.h"
#include "distflow/scope.h"
#include "graph/edge_packing.h"
#include "graph/graph_def_io.h"
#include "graph/placer.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

// The tasks of the two-task clusters below.
constexpr char kPsTask[] = "/job:ps/replica:0/task:0";
constexpr char kWorkerTask[] = "/job:worker/replica:0/task:0";

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
  const proto::GraphDef& ps = parts->at(kPsTask);
  const proto::GraphDef& worker = parts->at(kWorkerTask);
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

// An optimizer's update group on the worker waits for one apply op per
// variable on the ps: those control edges cross as one tensor, not one each.
TEST(PartitionTest, ControlEdgesFromOneTaskToOneNodeCrossOnce) {
  Scope root = Scope::NewRootScope();
  const Scope ps = root.WithDevice("/job:ps/task:0");
  std::vector<Operation> updates;
  for (const char* name : {"u1", "u2", "u3"}) {
    updates.push_back(ops::NoOp(ps.WithOpName(name)));
  }
  auto local = ops::NoOp(root.WithOpName("local"));
  updates.push_back(local);
  auto group =
      ops::NoOp(root.WithOpName("group").WithControlDependencies(updates));
  // After the group, back on the ps (as the global step's increment).
  ops::NoOp(ps.WithOpName("after").WithControlDependencies({group}));
  ASSERT_TRUE(root.ok());
  PlacementOptions placement;
  placement.jobs = {{"ps", 1}, {"worker", 1}};
  placement.default_job = "worker";
  ASSERT_TRUE(PlaceGraph(placement, root.graph()).ok());
  auto parts = PartitionGraph(*root.graph());
  ASSERT_TRUE(parts.ok()) << parts.status();
  const proto::GraphDef& ps_part = parts->at(kPsTask);
  const proto::GraphDef& worker = parts->at(kWorkerTask);
  EXPECT_EQ(CountOps(ps_part, "_Send"), 1);
  EXPECT_EQ(CountOps(worker, "_Recv"), 1);
  EXPECT_EQ(CountOps(worker, "_Send"), 1);
  EXPECT_EQ(CountOps(ps_part, "_Recv"), 1);
  // The ps's NoOp that waits for u1, u2 and u3 before its edge crosses.
  bool found = false;
  for (const auto& node : ps_part.node()) {
    if (node.op() != "NoOp" || node.input_size() != 3) continue;
    found = true;
    EXPECT_EQ(node.input(0), "^u1");
    EXPECT_EQ(node.input(2), "^u3");
  }
  EXPECT_TRUE(found);
  for (const auto& [task, def] : *parts) {
    Graph g;
    EXPECT_TRUE(ImportGraphDef(def, &g).ok()) << task;
  }
}

absl::StatusOr<std::map<std::string, proto::GraphDef>> PlaceAndPartition(
    const Scope& root) {
  PlacementOptions placement;
  placement.jobs = {{"ps", 1}, {"worker", 1}};
  placement.default_job = "worker";
  if (absl::Status s = PlaceGraph(placement, root.graph()); !s.ok()) return s;
  return PartitionGraph(*root.graph());
}

// A small network's biases cross in one transfer; a tensor over the packing
// limit crosses on its own.
TEST(PartitionTest, SmallTensorsToOneTaskCrossAsOnePackedTensor) {
  Scope root = Scope::NewRootScope();
  const Scope ps = root.WithDevice("/job:ps/task:0");
  auto a = ops::Const(ps.WithOpName("a"), Tensor::Vector<float>({1, 2}));
  auto b = ops::Const(ps.WithOpName("b"), 3.0f);
  auto c =
      ops::Const(ps.WithOpName("c"), Tensor::Matrix<float>({{4, 5}, {7, 8}}));
  auto big = ops::Fill(ps.WithOpName("big"),
                       Tensor::Vector<int64_t>({kMaxPackedTensorBytes}), 1.0f);
  auto sum = ops::Add(root.WithOpName("sum"), ops::Add(root, a, b), c);
  ops::Add(root.WithOpName("more"), big, big);
  ops::Identity(root.WithOpName("out"), sum);
  ASSERT_TRUE(root.ok()) << root.status();
  auto parts = PlaceAndPartition(root);
  ASSERT_TRUE(parts.ok()) << parts.status();
  const proto::GraphDef& ps_part = parts->at(kPsTask);
  const proto::GraphDef& worker = parts->at(kWorkerTask);
  EXPECT_EQ(CountOps(ps_part, "_Send"), 2);  // a, b and c packed; big
  EXPECT_EQ(CountOps(ps_part, "_GatherPack"), 1);
  EXPECT_EQ(CountOps(worker, "_Recv"), 2);
  EXPECT_EQ(CountOps(worker, "Slice"), 3);
  for (const auto& [task, def] : *parts) {
    Graph g;
    EXPECT_TRUE(ImportGraphDef(def, &g).ok()) << task;
  }
}

// Packs hold at most kMaxPackBytes: six tensors of a quarter of that cross
// as a pack of four and a pack of two, and a tensor just over the per-tensor
// limit crosses on its own.
TEST(PartitionTest, PacksAreBoundedInBytes) {
  Scope root = Scope::NewRootScope();
  const Scope ps = root.WithDevice("/job:ps/task:0");
  const int64_t quarter_pack = kMaxPackBytes / 4 / sizeof(float);  // floats
  std::vector<Output> members;
  for (int i = 0; i < 6; ++i) {
    members.push_back(
        ops::Fill(ps.WithOpName(absl::StrCat("m", i)),
                  Tensor::Vector<int64_t>({quarter_pack}), 1.0f));
  }
  auto over = ops::Fill(
      ps.WithOpName("over"),
      Tensor::Vector<int64_t>({kMaxPackedTensorBytes / 4 + 1}), 1.0f);
  Output sum = members[0];
  for (int i = 1; i < 6; ++i) sum = ops::Add(root, sum, members[i]);
  ops::Identity(root.WithOpName("out"), sum);
  ops::Identity(root.WithOpName("out_over"), over);
  ASSERT_TRUE(root.ok()) << root.status();
  auto parts = PlaceAndPartition(root);
  ASSERT_TRUE(parts.ok()) << parts.status();
  const proto::GraphDef& ps_part = parts->at(kPsTask);
  const proto::GraphDef& worker = parts->at(kWorkerTask);
  EXPECT_EQ(CountOps(ps_part, "_GatherPack"), 2);
  EXPECT_EQ(CountOps(ps_part, "_Send"), 3);  // two packs and `over`
  EXPECT_EQ(CountOps(worker, "Slice"), 6);
  int64_t largest_pack = 0;
  for (const auto& node : ps_part.node()) {
    if (node.op() != "_GatherPack") continue;
    largest_pack = std::max<int64_t>(largest_pack, node.input_size());
  }
  EXPECT_EQ(largest_pack, 4);
}

// A packed transfer waits for all its tensors: two small tensors where the
// second is computed from what the first one's consumer sends back would
// deadlock if packed, so they cross separately.
TEST(PartitionTest, TensorsThatDependOnEachOthersConsumersAreNotPacked) {
  Scope root = Scope::NewRootScope();
  const Scope ps = root.WithDevice("/job:ps/task:0");
  auto x = ops::Const(ps.WithOpName("x"), Tensor::Vector<float>({1, 2}));
  auto y = ops::Add(root.WithOpName("y"), x, x);  // on the worker
  auto z = ops::Add(ps.WithOpName("z"), y, y);    // back on the ps
  ops::Add(root.WithOpName("w"), z, x);           // on the worker
  ASSERT_TRUE(root.ok()) << root.status();
  auto parts = PlaceAndPartition(root);
  ASSERT_TRUE(parts.ok()) << parts.status();
  const proto::GraphDef& ps_part = parts->at(kPsTask);
  EXPECT_EQ(CountOps(ps_part, "_Send"), 2);
  EXPECT_EQ(CountOps(ps_part, "_GatherPack"), 0);
}

}  // namespace
}  // namespace distflow
