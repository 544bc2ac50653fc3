#include <map>
#include <string>
#include <vector>

#include "distflow/gradients.h"
#include "distflow/ops.h"
#include "distflow/partitioned_variable.h"
#include "distflow/replica_device_setter.h"
#include "distflow/session.h"
#include "gmock/gmock.h"
#include "graph/graph.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kRows = 10;
constexpr int64_t kCols = 3;

// Row r of the table is {r * 100, r * 100 + 1, r * 100 + 2}.
float TableValue(int64_t r, int64_t c) { return r * 100.0f + c; }

Tensor Table() {
  Tensor t(DataType::kFloat, TensorShape({kRows, kCols}));
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t c = 0; c < kCols; ++c)
      t.flat<float>()[r * kCols + c] = TableValue(r, c);
  return t;
}

// The naive lookup: table rows in the order of the ids.
Tensor NaiveLookup(const std::vector<int64_t>& ids) {
  Tensor t(DataType::kFloat,
           TensorShape({static_cast<int64_t>(ids.size()), kCols}));
  for (size_t j = 0; j < ids.size(); ++j)
    for (int64_t c = 0; c < kCols; ++c)
      t.flat<float>()[j * kCols + c] = TableValue(ids[j], c);
  return t;
}

// The table split for "mod" over `n` shards: shard p holds ids p, p + n, ...
std::vector<Tensor> ModShards(int n, std::vector<int64_t>* rows) {
  std::vector<Tensor> shards;
  for (int p = 0; p < n; ++p) {
    std::vector<float> values;
    int64_t count = 0;
    for (int64_t id = p; id < kRows; id += n, ++count)
      for (int64_t c = 0; c < kCols; ++c) values.push_back(TableValue(id, c));
    rows->push_back(count);
    shards.push_back(
        *Tensor::FromValues<float>(TensorShape({count, kCols}), values));
  }
  return shards;
}

const std::vector<int64_t> kIds = {0, 9, 3, 3, 7, 1, 5, 9, 2};

absl::StatusOr<std::vector<Tensor>> InitAndRun(
    const Scope& scope, const std::vector<Output>& fetches,
    const ClientSession::FeedDict& feeds = {}) {
  auto session = ClientSession::Create(scope);
  if (!session.ok()) return session.status();
  absl::Status init =
      (*session)->RunTargets({ops::GlobalVariablesInitializer(scope)});
  if (!init.ok()) return init;
  return (*session)->Run(feeds, fetches);
}

TEST(EmbeddingLookupTest, DivOverAPartitionedVariableMatchesTheTable) {
  for (int shards : {1, 2, 3, 4}) {
    Scope s = Scope::NewRootScope();
    PartitionedVariable table(s, "emb", Table(), shards);
    EmbeddingLookupOptions div;
    div.partition_strategy = "div";
    Output rows = EmbeddingLookup(s, table, Tensor::Vector<int64_t>(kIds), div);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(rows.shape().DebugString(), "[9,3]");
    auto got = InitAndRun(s, {rows});
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE((*got)[0].Equals(NaiveLookup(kIds)))
        << shards << " shards: " << (*got)[0].DebugString();
  }
}

TEST(EmbeddingLookupTest, ModOverShardsLaidOutByModMatchesTheTable) {
  for (int n : {2, 3, 4}) {
    Scope s = Scope::NewRootScope();
    std::vector<int64_t> rows;
    std::vector<Output> shards;
    for (const Tensor& t : ModShards(n, &rows))
      shards.push_back(ops::Variable(s, t));
    auto ids = ops::Placeholder(s, DataType::kInt32, {-1});
    Output looked_up = EmbeddingLookup(s, shards, rows, ids);
    ASSERT_TRUE(s.ok()) << s.status();
    std::vector<int32_t> ids32(kIds.begin(), kIds.end());
    auto got =
        InitAndRun(s, {looked_up}, {{ids, Tensor::Vector<int32_t>(ids32)}});
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE((*got)[0].Equals(NaiveLookup(kIds)))
        << n << " shards: " << (*got)[0].DebugString();
  }
}

TEST(EmbeddingLookupTest, IdsOfHigherRankKeepTheirShape) {
  Scope s = Scope::NewRootScope();
  PartitionedVariable table(s, "emb", Table(), 3);
  EmbeddingLookupOptions div;
  div.partition_strategy = "div";
  Output rows = EmbeddingLookup(
      s, table, Tensor::Matrix<int32_t>({{4, 0, 9}, {9, 5, 5}}), div);
  ASSERT_TRUE(s.ok()) << s.status();
  auto got = InitAndRun(s, {rows});
  ASSERT_TRUE(got.ok()) << got.status();
  Tensor want =
      *NaiveLookup({4, 0, 9, 9, 5, 5}).Reshape(TensorShape({2, 3, kCols}));
  EXPECT_TRUE((*got)[0].Equals(want)) << (*got)[0].DebugString();
}

TEST(EmbeddingLookupTest, GathersRunBesideTheirShards) {
  auto cluster =
      ClusterSpec::Create({{"ps", {"p0:1", "p1:1"}}, {"worker", {"w0:1"}}});
  Scope root = Scope::NewRootScope();
  Scope s = root.WithDeviceFunction(
      ReplicaDeviceSetter(*cluster, "/job:worker/task:0"));
  PartitionedVariable table(s, "emb", Table(), 3);
  Output rows = EmbeddingLookup(s, table, Tensor::Vector<int64_t>(kIds));
  ASSERT_TRUE(root.ok()) << root.status();
  std::map<std::string, std::string> gather_devices;  // _class -> device
  for (const auto& node : root.graph()->nodes()) {
    if (node->op() != "Gather" && node->op() != "GatherV2") continue;
    ASSERT_TRUE(node->attrs().contains("_class")) << node->name();
    gather_devices[node->attrs().at("_class").list().s(0)] =
        node->requested_device();
  }
  ASSERT_EQ(gather_devices.size(), 3u);
  const char* ps[] = {"/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"};
  for (int p = 0; p < 3; ++p) {
    const ops::Variable& shard = table.shards()[p];
    EXPECT_EQ(shard.handle().op().device(), ps[p]);
    EXPECT_EQ(gather_devices["loc:@" + shard.var_name()], ps[p]) << p;
  }
  // Routing and stitching happen on the worker.
  EXPECT_EQ(rows.op().device(), "/job:worker/task:0");
  // And the placement does not change the values.
  auto got = InitAndRun(root, {rows});
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<int64_t> mod_rows;  // what "mod" reads from a div layout
  for (int64_t id : kIds) {
    const int64_t p = id % 3, r = id / 3;
    mod_rows.push_back(table.shard_offset(static_cast<int>(p)) + r);
  }
  EXPECT_TRUE((*got)[0].Equals(NaiveLookup(mod_rows)));
}

TEST(EmbeddingLookupTest, GradientPerShardIsSparseOverTheLookedUpRows) {
  for (const std::string strategy : {"mod", "div"}) {
    Scope s = Scope::NewRootScope();
    PartitionedVariable table(s, "emb", Table(), 3);
    EmbeddingLookupOptions options;
    options.partition_strategy = strategy;
    Output rows =
        EmbeddingLookup(s, table, Tensor::Vector<int64_t>(kIds), options);
    // d loss / d rows[j] = {j, j + 0.5, j + 0.25}
    Tensor upstream(DataType::kFloat,
                    TensorShape({static_cast<int64_t>(kIds.size()), kCols}));
    for (size_t j = 0; j < kIds.size(); ++j)
      for (int64_t c = 0; c < kCols; ++c)
        upstream.flat<float>()[j * kCols + c] =
            j + (c == 0 ? 0 : 1.0f / (2 * c));
    std::vector<Output> xs(table.shards().begin(), table.shards().end());
    auto grads = Gradients(s, {rows}, xs, {ops::Const(s, upstream)});
    ASSERT_TRUE(grads.ok()) << grads.status();
    ASSERT_EQ(grads->size(), 3u);
    std::vector<Output> fetches;
    for (const Gradient& g : *grads) {
      ASSERT_TRUE(g.is_sparse()) << strategy;
      fetches.push_back(g.sparse().indices);
      fetches.push_back(g.sparse().values);
      fetches.push_back(g.sparse().dense_shape);
    }
    auto got = InitAndRun(s, fetches);
    ASSERT_TRUE(got.ok()) << got.status();

    // The reference: every id sends its upstream row to (its shard, its row).
    for (int p = 0; p < 3; ++p) {
      std::vector<int64_t> want_rows;
      std::vector<float> want_values;
      for (size_t j = 0; j < kIds.size(); ++j) {
        const int64_t id = kIds[j];
        int64_t shard, row;
        if (strategy == "mod") {
          shard = id % 3;
          row = id / 3;
        } else {
          shard = id < 4 ? 0 : id < 7 ? 1 : 2;
          row = id - table.shard_offset(static_cast<int>(shard));
        }
        if (shard != p) continue;
        want_rows.push_back(row);
        for (int64_t c = 0; c < kCols; ++c)
          want_values.push_back(upstream.flat<float>()[j * kCols + c]);
      }
      const Tensor& indices = (*got)[3 * p];
      const Tensor& values = (*got)[3 * p + 1];
      const Tensor& dense_shape = (*got)[3 * p + 2];
      std::vector<int64_t> got_rows;
      for (int64_t k = 0; k < indices.NumElements(); ++k) {
        got_rows.push_back(indices.dtype() == DataType::kInt32
                               ? indices.flat<int32_t>()[k]
                               : indices.flat<int64_t>()[k]);
      }
      EXPECT_EQ(got_rows, want_rows) << strategy << " shard " << p;
      ASSERT_EQ(values.NumElements(), static_cast<int64_t>(want_values.size()));
      for (size_t k = 0; k < want_values.size(); ++k)
        EXPECT_EQ(values.flat<float>()[k], want_values[k]) << k;
      ASSERT_EQ(dense_shape.NumElements(), 2);
      EXPECT_EQ(dense_shape.flat<int32_t>()[0], table.shard_rows()[p]);
      EXPECT_EQ(dense_shape.flat<int32_t>()[1], kCols);
    }
  }
}

TEST(EmbeddingLookupTest, Errors) {
  {
    Scope s = Scope::NewRootScope();
    PartitionedVariable table(s, "emb", Table(), 3);
    auto ids = ops::Placeholder(s, DataType::kInt64, {-1});
    Output rows = EmbeddingLookup(s, table, ids);
    auto bad = InitAndRun(s, {rows}, {{ids, Tensor::Vector<int64_t>({1, 10})}});
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(bad.status().message(), HasSubstr("id 10 (at position 1)"));
  }
  {
    Scope s = Scope::NewRootScope();
    PartitionedVariable table(s, "emb", Table(), 3);
    EmbeddingLookupOptions options;
    options.partition_strategy = "range";
    EmbeddingLookup(s, table, Tensor::Vector<int64_t>({1}), options);
    EXPECT_THAT(s.status().message(), HasSubstr("'range' is unknown"));
  }
  {
    Scope s = Scope::NewRootScope();
    auto ids = ops::Placeholder(s, DataType::kInt64);  // unknown shape
    PartitionedVariable table(s, "emb", Table(), 2);
    EmbeddingLookup(s, table, ids);
    EXPECT_THAT(s.status().message(), HasSubstr("must be a vector"));
  }
  {
    Scope s = Scope::NewRootScope();
    EmbeddingLookup(s, PartitionedVariable(), Tensor::Vector<int64_t>({1}));
    EXPECT_THAT(s.status().message(), HasSubstr("invalid partitioned"));
  }
}

}  // namespace
}  // namespace distflow
