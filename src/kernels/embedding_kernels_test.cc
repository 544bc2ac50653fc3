// DynamicPartition, DynamicStitch and PartitionIds, run through a local
// session and compared with references computed by plain loops.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "distflow/ops.h"
#include "distflow/scope.h"
#include "distflow/session.h"
#include "distflow/tensor.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"

namespace distflow {
namespace {

using test::HasError;
using test::MakeTensor;
using test::RandomTensor;
using test::RunGraph;
using test::RunOne;
using test::TensorsEqual;

// The reference partition: rows of `data` ([n, inner...]) grouped by p.
std::vector<Tensor> NaivePartition(const Tensor& data,
                                   const std::vector<int32_t>& p, int parts) {
  const int64_t n = data.dim_size(0);
  const int64_t row = n == 0 ? 0 : data.NumElements() / n;
  std::vector<Tensor> out;
  for (int k = 0; k < parts; ++k) {
    std::vector<float> values;
    int64_t rows = 0;
    for (int64_t j = 0; j < n; ++j) {
      if (p[j] != k) continue;
      ++rows;
      for (int64_t e = 0; e < row; ++e)
        values.push_back(data.flat<float>()[j * row + e]);
    }
    std::vector<int64_t> dims = data.shape().dim_sizes();
    dims[0] = rows;
    out.push_back(MakeTensor<float>(*TensorShape::FromDims(dims), values));
  }
  return out;
}

TEST(DynamicPartitionTest, GroupsRowsInOrder) {
  const Tensor data = RandomTensor<float>(TensorShape({7, 3}), 1);
  const std::vector<int32_t> p = {2, 0, 1, 0, 2, 2, 0};
  Scope s = Scope::NewRootScope();
  std::vector<Output> parts =
      ops::DynamicPartition(s, data, Tensor::Vector<int32_t>(p), 4);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[0].shape().DebugString(), "[?,3]");
  auto got = RunGraph(s, {}, parts);
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<Tensor> want = NaivePartition(data, p, 4);
  for (int k = 0; k < 4; ++k)
    EXPECT_TRUE(TensorsEqual<float>((*got)[k], want[k])) << k;
  EXPECT_EQ((*got)[3].shape(), TensorShape({0, 3}));
}

TEST(DynamicPartitionTest, PartitionsOfHigherRankAndOtherTypes) {
  // partitions [2,2] over data [2,2]: element-wise, output vectors.
  Scope s = Scope::NewRootScope();
  auto parts =
      ops::DynamicPartition(s, Tensor::Matrix<int64_t>({{10, 11}, {12, 13}}),
                            Tensor::Matrix<int32_t>({{1, 0}, {0, 1}}), 2);
  auto got = RunGraph(s, {}, parts);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(
      TensorsEqual<int64_t>((*got)[0], Tensor::Vector<int64_t>({11, 12})));
  EXPECT_TRUE(
      TensorsEqual<int64_t>((*got)[1], Tensor::Vector<int64_t>({10, 13})));
}

TEST(DynamicPartitionTest, Errors) {
  Scope s = Scope::NewRootScope();
  auto p = ops::Placeholder(s, DataType::kInt32);
  auto parts = ops::DynamicPartition(s, Tensor::Vector<float>({1, 2, 3}), p, 2);
  auto bad = RunGraph(s, {{p, Tensor::Vector<int32_t>({0, 2, 1})}}, parts);
  EXPECT_TRUE(HasError(bad.status(), absl::StatusCode::kInvalidArgument,
                       {"partitions[1] = 2 is not in [0, 2)"}));
  auto short_p = RunGraph(s, {{p, Tensor::Vector<int32_t>({0, 1})}}, parts);
  EXPECT_TRUE(HasError(short_p.status(), absl::StatusCode::kInvalidArgument,
                       {"must be a prefix of the data's shape [3]"}));

  Scope t = Scope::NewRootScope();
  ops::DynamicPartition(t, Tensor::Vector<float>({1, 2, 3}),
                        Tensor::Vector<int32_t>({0, 1}), 2);
  EXPECT_TRUE(HasError(t.status(), absl::StatusCode::kInvalidArgument,
                       {"must be a prefix"}));
}

TEST(DynamicStitchTest, MergesByIndexLastWinsAndZeroFills) {
  Scope s = Scope::NewRootScope();
  auto merged = ops::DynamicStitch(
      s,
      {ops::Const(s, Tensor::Vector<int32_t>({0, 2})),
       ops::Const(s, Tensor::Vector<int32_t>({5, 2}))},
      {ops::Const(s, Tensor::Matrix<float>({{1, 1}, {2, 2}})),
       ops::Const(s, Tensor::Matrix<float>({{5, 5}, {9, 9}}))});
  ASSERT_TRUE(s.ok()) << s.status();
  // Constant indices give a known row count.
  EXPECT_EQ(merged.shape().DebugString(), "[6,2]");
  auto got = RunOne(s, merged);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(TensorsEqual<float>(
      *got,
      Tensor::Matrix<float>({{1, 1}, {0, 0}, {9, 9}, {0, 0}, {0, 0}, {5, 5}})));
}

TEST(DynamicStitchTest, InvertsDynamicPartition) {
  const int n = 50, parts = 4;
  const Tensor data = RandomTensor<float>(TensorShape({n, 2, 3}), 7);
  std::vector<int32_t> p(n), positions(n);
  for (int j = 0; j < n; ++j) {
    p[j] = (j * 7 + 3) % parts;
    positions[j] = j;
  }
  Scope s = Scope::NewRootScope();
  auto pt = ops::Const(s, Tensor::Vector<int32_t>(p));
  auto rows = ops::DynamicPartition(s, data, pt, parts);
  auto where =
      ops::DynamicPartition(s, Tensor::Vector<int32_t>(positions), pt, parts);
  auto back = ops::DynamicStitch(s, where, rows);
  auto got = RunOne(s, back);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(TensorsEqual<float>(*got, data));
}

TEST(DynamicStitchTest, Errors) {
  Scope s = Scope::NewRootScope();
  ops::DynamicStitch(s, {}, {});
  EXPECT_TRUE(HasError(s.status(), absl::StatusCode::kInvalidArgument,
                       {"as many index tensors as data tensors"}));

  Scope t = Scope::NewRootScope();
  auto idx = ops::Placeholder(t, DataType::kInt32);
  auto merged = ops::DynamicStitch(
      t, {idx}, {ops::Const(t, Tensor::Matrix<float>({{1, 1}, {2, 2}}))});
  auto neg = RunGraph(t, {{idx, Tensor::Vector<int32_t>({0, -1})}}, {merged});
  EXPECT_TRUE(HasError(neg.status(), absl::StatusCode::kInvalidArgument,
                       {"negative index -1"}));
  auto wrong =
      RunGraph(t, {{idx, Tensor::Vector<int32_t>({0, 1, 2})}}, {merged});
  EXPECT_TRUE(HasError(wrong.status(), absl::StatusCode::kInvalidArgument,
                       {"data 0 of shape [2,2]"}));
}

// TensorFlow's formulas for a table of `total` rows split as
// fixed_size_partitioner does (the first total % n shards one row longer).
void ReferenceRoute(const std::string& strategy, int64_t id, int64_t total,
                    int64_t n, int32_t* shard, int64_t* row) {
  if (strategy == "mod") {
    *shard = static_cast<int32_t>(id % n);
    *row = id / n;
    return;
  }
  const int64_t per = total / n, extras = total % n;
  *shard = static_cast<int32_t>(
      std::max(id / (per + 1), per == 0 ? 0 : (id - extras) / per));
  *row = *shard < extras ? id % (per + 1) : (id - extras) % per;
}

TEST(PartitionIdsTest, MatchesTheReferenceFormulas) {
  for (const std::string strategy : {"mod", "div"}) {
    for (int64_t total : {10, 12, 3}) {
      const int64_t n = 3;
      std::vector<int64_t> rows;
      for (int64_t k = 0; k < n; ++k)
        rows.push_back(total / n + (k < total % n ? 1 : 0));
      std::vector<int64_t> ids;
      for (int64_t j = 0; j < 40; ++j) ids.push_back((j * 7 + 5) % total);
      Scope s = Scope::NewRootScope();
      auto routed =
          ops::PartitionIds(s, Tensor::Vector<int64_t>(ids), rows, strategy);
      ASSERT_TRUE(s.ok()) << s.status();
      auto got = RunGraph(
          s, {}, {routed.partition, routed.local_ids, routed.position});
      ASSERT_TRUE(got.ok()) << got.status();
      for (size_t j = 0; j < ids.size(); ++j) {
        int32_t shard;
        int64_t row;
        ReferenceRoute(strategy, ids[j], total, n, &shard, &row);
        EXPECT_EQ((*got)[0].flat<int32_t>()[j], shard)
            << strategy << " total " << total << " id " << ids[j];
        EXPECT_EQ((*got)[1].flat<int64_t>()[j], row)
            << strategy << " total " << total << " id " << ids[j];
        EXPECT_EQ((*got)[2].flat<int32_t>()[j], static_cast<int32_t>(j));
        EXPECT_LT(row, rows[shard]);
      }
    }
  }
}

TEST(PartitionIdsTest, Errors) {
  Scope s = Scope::NewRootScope();
  auto ids = ops::Placeholder(s, DataType::kInt32);
  auto routed = ops::PartitionIds(s, ids, {2, 2}, "div");
  auto bad =
      RunGraph(s, {{ids, Tensor::Vector<int32_t>({1, 4})}}, {routed.partition});
  EXPECT_TRUE(HasError(bad.status(), absl::StatusCode::kInvalidArgument,
                       {"id 4 (at position 1)", "4 rows in 2 shards"}));
  auto negative =
      RunGraph(s, {{ids, Tensor::Vector<int32_t>({-1})}}, {routed.partition});
  EXPECT_TRUE(HasError(negative.status(), absl::StatusCode::kInvalidArgument,
                       {"id -1"}));

  Scope t = Scope::NewRootScope();
  ops::PartitionIds(t, Tensor::Vector<int32_t>({1}), {2, 2}, "range");
  EXPECT_TRUE(HasError(t.status(), absl::StatusCode::kInvalidArgument,
                       {"partition_strategy 'range'"}));

  // "mod" over unbalanced shards: id 3 would be row 1 of shard 1, which has
  // one row.
  Scope u = Scope::NewRootScope();
  auto unbalanced =
      ops::PartitionIds(u, Tensor::Vector<int32_t>({3}), {3, 1}, "mod");
  EXPECT_TRUE(HasError(RunOne(u, unbalanced.partition).status(),
                       absl::StatusCode::kInvalidArgument,
                       {"id 3 belongs to shard 1"}));
}

}  // namespace
}  // namespace distflow
