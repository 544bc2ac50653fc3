// A sharded embedding trained on a cluster (real gRPC servers on 127.0.0.1):
// the table's shards spread over two ps tasks by the replica device setter,
// a lookup on the worker, and an optimizer whose sparse update of each shard
// runs on the ps task that holds it and changes only the rows looked up.
//
// The loss is sum(rows * weights), so the gradient of each looked-up row is
// its row of `weights` whatever the table holds, and gradient descent moves
// each row by exactly -rate times the sum of the weights of its lookups.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "distflow/distflow.h"
#include "distributed/rpc/test_cluster.h"
#include "graph/graph.h"
#include "graph/placer.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

constexpr int64_t kRows = 10;
constexpr int64_t kCols = 3;
constexpr int kShards = 3;
constexpr float kRate = 0.5f;
// Row 3 twice (its gradients add up); rows 2, 4, 5, 6 and 8 not at all.
const std::vector<int64_t> kIds = {0, 9, 3, 3, 7, 1};

// Row r of the table is {r * 100, r * 100 + 1, r * 100 + 2}.
Tensor Table() {
  Tensor t(DataType::kFloat, TensorShape({kRows, kCols}));
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t c = 0; c < kCols; ++c)
      t.flat<float>()[r * kCols + c] = r * 100.0f + c;
  return t;
}

// d loss / d (the j-th looked-up row)[c]: distinct small binary fractions,
// so that every sum and product below is exact in float.
float Weight(size_t j, int64_t c) { return (j + 1) + c * 0.25f; }

Tensor Weights() {
  Tensor t(DataType::kFloat,
           TensorShape({static_cast<int64_t>(kIds.size()), kCols}));
  for (size_t j = 0; j < kIds.size(); ++j)
    for (int64_t c = 0; c < kCols; ++c)
      t.flat<float>()[j * kCols + c] = Weight(j, c);
  return t;
}

class ShardedEmbeddingClusterTest
    : public ::testing::TestWithParam<std::string> {};

TEST_P(ShardedEmbeddingClusterTest, SparseUpdateChangesOnlyLookedUpRowsOnTheirPs) {
  const std::string strategy = GetParam();
  auto cluster = TestCluster::Create({{"ps", 2}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto spec = ClusterSpec::Create((*cluster)->cluster());
  ASSERT_TRUE(spec.ok()) << spec.status();
  Scope root = Scope::NewRootScope();
  Scope s = root.WithDeviceFunction(
      ReplicaDeviceSetter(*spec, "/job:worker/task:0"));
  PartitionedVariable table(s, "emb", Table(), kShards);
  Output ids = ops::Placeholder(s.WithOpName("ids"), DataType::kInt64,
                                PartialTensorShape({-1}));
  EmbeddingLookupOptions options;
  options.partition_strategy = strategy;
  Output rows = EmbeddingLookup(s, table, ids, options);
  Output loss = ops::Sum(s, ops::Mul(s, rows, ops::Const(s, Weights())),
                         Tensor::Vector<int32_t>({0, 1}));
  train::GradientDescentOptimizer gd(kRate);
  auto train_op = gd.Minimize(s, loss);
  ASSERT_TRUE(train_op.ok()) << train_op.status();
  Operation init = ops::GlobalVariablesInitializer(root);
  ASSERT_TRUE(root.ok()) << root.status();

  auto session = ClientSession::Create(
      root, SessionTarget((*cluster)->server("worker", 0)));
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_EQ((*session)->RunTargets({init}), absl::OkStatus());
  ASSERT_EQ((*session)->Run({{ids, Tensor::Vector<int64_t>(kIds)}}, {},
                            {*train_op})
                .status(),
            absl::OkStatus());

  // The table as it should be. Its initial value was split into shards of
  // consecutive rows; "div" looks id up in the row of that number, "mod" in
  // row id / n of shard id % n. Each lookup moves the row it read.
  auto row_of = [&](int64_t id) {
    return strategy == "div"
               ? id
               : table.shard_offset(static_cast<int>(id % kShards)) +
                     id / kShards;
  };
  Tensor want = Table();
  for (size_t j = 0; j < kIds.size(); ++j)
    for (int64_t c = 0; c < kCols; ++c)
      want.flat<float>()[row_of(kIds[j]) * kCols + c] -= kRate * Weight(j, c);
  std::vector<Output> shards(table.shards().begin(), table.shards().end());
  auto got = (*session)->Run(shards);
  ASSERT_TRUE(got.ok()) << got.status();
  int changed_rows = 0;
  for (int p = 0; p < kShards; ++p) {
    const Tensor& shard = (*got)[p];
    ASSERT_EQ(shard.shape().dim_size(0), table.shard_rows()[p]);
    for (int64_t r = 0; r < table.shard_rows()[p]; ++r) {
      const int64_t row = table.shard_offset(p) + r;
      bool changed = false;
      for (int64_t c = 0; c < kCols; ++c) {
        const float value = shard.flat<float>()[r * kCols + c];
        EXPECT_EQ(value, want.flat<float>()[row * kCols + c])
            << strategy << ": shard " << p << " row " << r << " column " << c;
        changed |= value != Table().flat<float>()[row * kCols + c];
      }
      changed_rows += changed ? 1 : 0;
    }
  }
  EXPECT_EQ(changed_rows, 5);  // the five distinct ids

  // Where the graph's updates run, as the master places them: each shard's
  // sparse update on the ps task of the shard, and no dense one anywhere.
  PlacementOptions placement;
  placement.jobs = {{"ps", 2}, {"worker", 1}};
  placement.default_job = "worker";
  ASSERT_EQ(PlaceGraph(placement, root.graph()), absl::OkStatus());
  // The device of each shard's variable node, by the node's name; round-robin
  // over the two ps tasks.
  std::map<std::string, std::string> shard_devices;
  const char* want_device[] = {"/job:ps/replica:0/task:0/device:CPU:0",
                               "/job:ps/replica:0/task:1/device:CPU:0",
                               "/job:ps/replica:0/task:0/device:CPU:0"};
  for (int p = 0; p < kShards; ++p) {
    const Node* variable = table.shards()[p].handle().node();
    shard_devices[variable->name()] = variable->assigned_device();
    EXPECT_EQ(variable->assigned_device(), want_device[p]) << variable->name();
  }
  int sparse_updates = 0;
  for (const auto& node : root.graph()->nodes()) {
    EXPECT_NE(node->op(), "ResourceApplyGradientDescent") << node->name();
    if (node->op() != "ResourceSparseApplyGradientDescent") continue;
    ++sparse_updates;
    const std::string& variable = node->inputs()[0].node->name();
    ASSERT_EQ(shard_devices.count(variable), 1u) << variable;
    EXPECT_EQ(node->assigned_device(), shard_devices[variable])
        << node->name();
  }
  EXPECT_EQ(sparse_updates, kShards);
}

INSTANTIATE_TEST_SUITE_P(Strategies, ShardedEmbeddingClusterTest,
                         ::testing::Values("mod", "div"));

}  // namespace
}  // namespace distflow
