#include "distflow/partitioned_variable.h"

#include <string>
#include <vector>

#include "distflow/ops.h"
#include "distflow/replica_device_setter.h"
#include "distflow/session.h"
#include "gmock/gmock.h"
#include "graph/graph.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ClusterSpec TwoPs() {
  return *ClusterSpec::Create(
      {{"ps", {"p0:1", "p1:1"}}, {"worker", {"w0:1", "w1:1"}}});
}

// A [rows, cols] float table whose element (r, c) is r * 100 + c.
Tensor Table(int64_t rows, int64_t cols) {
  Tensor t(DataType::kFloat, TensorShape({rows, cols}));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      t.flat<float>()[r * cols + c] = r * 100 + c;
  return t;
}

TEST(FixedSizePartitionTest, SplitsLikeTensorFlow) {
  EXPECT_THAT(FixedSizePartition(10, 3), ElementsAre(4, 3, 3));
  EXPECT_THAT(FixedSizePartition(11, 3), ElementsAre(4, 4, 3));
  EXPECT_THAT(FixedSizePartition(12, 3), ElementsAre(4, 4, 4));
  EXPECT_THAT(FixedSizePartition(7, 1), ElementsAre(7));
  // Never more shards than rows.
  EXPECT_THAT(FixedSizePartition(2, 5), ElementsAre(1, 1));
  EXPECT_TRUE(FixedSizePartition(0, 3).empty());
  EXPECT_TRUE(FixedSizePartition(5, 0).empty());
  // Any split: all rows, sizes within one of each other, longest first.
  for (int64_t rows = 1; rows < 40; ++rows) {
    for (int shards = 1; shards < 9; ++shards) {
      std::vector<int64_t> sizes = FixedSizePartition(rows, shards);
      ASSERT_EQ(static_cast<int64_t>(sizes.size()),
                std::min<int64_t>(rows, shards));
      int64_t sum = 0;
      for (size_t i = 0; i < sizes.size(); ++i) {
        sum += sizes[i];
        EXPECT_LE(sizes.back(), sizes[i]);
        EXPECT_LE(sizes[i], sizes.back() + 1);
        if (i > 0) {
          EXPECT_LE(sizes[i], sizes[i - 1]);
        }
      }
      EXPECT_EQ(sum, rows);
    }
  }
}

TEST(PartitionedVariableTest, ShardsOfAValueAndTheirNamesShapesAndValue) {
  Scope s = Scope::NewRootScope();
  const Tensor table = Table(10, 2);
  PartitionedVariable emb(s, "emb", table, 3);
  Output whole = emb.Value(s);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(emb.valid());
  EXPECT_EQ(emb.name(), "emb");
  EXPECT_EQ(emb.dtype(), DataType::kFloat);
  EXPECT_EQ(emb.shape(), TensorShape({10, 2}));
  ASSERT_EQ(emb.num_shards(), 3);
  EXPECT_THAT(emb.shard_rows(), ElementsAre(4, 3, 3));
  EXPECT_EQ(emb.shard_offset(0), 0);
  EXPECT_EQ(emb.shard_offset(2), 7);
  const std::vector<std::string> names = {"emb/part_0", "emb/part_1",
                                          "emb/part_2"};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(emb.shards()[i].var_name(), names[i]);
    EXPECT_EQ(emb.shards()[i].shape().DebugString(),
              i == 0 ? "[4,2]" : "[3,2]");
  }
  EXPECT_EQ(whole.shape().DebugString(), "[10,2]");

  auto session = ClientSession::Create(s);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE(
      (*session)->RunTargets({ops::GlobalVariablesInitializer(s)}).ok());
  auto got = (*session)->Run(
      {whole, emb.shards()[0], emb.shards()[1], emb.shards()[2]});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE((*got)[0].Equals(table)) << (*got)[0].DebugString();
  EXPECT_TRUE((*got)[1].Equals(table.Slice(0, 4)));
  EXPECT_TRUE((*got)[2].Equals(table.Slice(4, 7)));
  EXPECT_TRUE((*got)[3].Equals(table.Slice(7, 10)));
}

TEST(PartitionedVariableTest, ShardsSpreadOverPsTasksWithTheirInitializers) {
  Scope root = Scope::NewRootScope();
  Scope s = root.WithDeviceFunction(
      ReplicaDeviceSetter(TwoPs(), "/job:worker/task:0"));
  PartitionedVariable emb(s, "emb", DataType::kFloat, TensorShape({7, 3}), 3,
                          [](const Scope& scope, const TensorShape& shape) {
                            return ops::Ones(scope, shape);
                          });
  Output whole = emb.Value(s);
  ASSERT_TRUE(root.ok()) << root.status();
  ASSERT_EQ(emb.num_shards(), 3);
  EXPECT_THAT(emb.shard_rows(), ElementsAre(3, 2, 2));
  const std::vector<std::string> devices = {"/job:ps/task:0", "/job:ps/task:1",
                                            "/job:ps/task:0"};
  for (int i = 0; i < 3; ++i) {
    const ops::Variable& shard = emb.shards()[i];
    EXPECT_EQ(shard.handle().op().device(), devices[i]) << i;
    EXPECT_EQ(shard.op().device(), devices[i]) << i;  // its read
    // The initial value is computed on the ps, beside the shard.
    ASSERT_EQ(emb.initializers().size(), 3u);
    EXPECT_EQ(emb.initializers()[i].device(), devices[i]) << i;
    EXPECT_EQ(emb.initializers()[i].name(), shard.var_name() + "/Assign");
    const Node* value = emb.initializers()[i].node()->input(1).node;
    EXPECT_EQ(value->requested_device(), devices[i]) << value->name();
  }
  // The whole value is assembled on the worker.
  EXPECT_EQ(whole.op().device(), "/job:worker/task:0");

  auto session = ClientSession::Create(root);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE(
      (*session)->RunTargets({ops::GlobalVariablesInitializer(root)}).ok());
  auto got = (*session)->Run({whole});
  ASSERT_TRUE(got.ok()) << got.status();
  Tensor ones(DataType::kFloat, TensorShape({7, 3}));
  for (float& v : ones.flat<float>()) v = 1;
  EXPECT_TRUE((*got)[0].Equals(ones)) << (*got)[0].DebugString();
}

TEST(PartitionedVariableTest, OneShard) {
  Scope s = Scope::NewRootScope();
  PartitionedVariable emb(s, "emb", Table(3, 2), 1);
  Output whole = emb.Value(s);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(emb.shards()[0].var_name(), "emb/part_0");
  auto session = ClientSession::Create(s);
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->RunTargets(emb.initializers()).ok());
  auto got = (*session)->Run({whole});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE((*got)[0].Equals(Table(3, 2)));
}

TEST(PartitionedVariableTest, Errors) {
  {
    Scope s = Scope::NewRootScope();
    PartitionedVariable v(s, "scalar", Tensor::Scalar<float>(1), 2);
    EXPECT_FALSE(v.valid());
    EXPECT_THAT(s.status().message(),
                HasSubstr("partitioned variable 'scalar' of shape []"));
    EXPECT_FALSE(v.Value(s).valid());
  }
  {
    Scope s = Scope::NewRootScope();
    PartitionedVariable v(s, "emb", Table(4, 2), 0);
    EXPECT_FALSE(v.valid());
    EXPECT_THAT(s.status().message(), HasSubstr("num_shards is 0"));
  }
  {
    Scope s = Scope::NewRootScope();
    PartitionedVariable v(s, "emb", DataType::kFloat, TensorShape({0, 2}), 2,
                          [](const Scope& scope, const TensorShape& shape) {
                            return ops::Zeros(scope, shape);
                          });
    EXPECT_FALSE(v.valid());
    EXPECT_THAT(s.status().message(), HasSubstr("at least one row"));
  }
  {
    Scope s = Scope::NewRootScope();
    PartitionedVariable v(s, "emb", DataType::kFloat, TensorShape({4, 2}), 2,
                          nullptr);
    EXPECT_FALSE(v.valid());
    EXPECT_THAT(s.status().message(), HasSubstr("the initializer is empty"));
  }
}

}  // namespace
}  // namespace distflow
