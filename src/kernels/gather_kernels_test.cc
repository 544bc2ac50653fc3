// Gather, UnsortedSegmentSum, OneHot and Range against naive loops.
#include <cstdint>
#include <string>
#include <vector>

#include "distflow/ops.h"
#include "gtest/gtest.h"
#include "kernels/index_test_util.h"
#include "kernels/kernel_test_util.h"

namespace distflow {
namespace {

using test::HasError;
using test::MakeTensor;
using test::RandomTensor;
using test::RunOne;
using test::TensorsEqual;

template <typename T, typename I>
Tensor NaiveGather(const Tensor& params, const Tensor& indices, int axis) {
  std::vector<int64_t> dims;
  const auto& pd = params.shape().dim_sizes();
  dims.insert(dims.end(), pd.begin(), pd.begin() + axis);
  const auto& id = indices.shape().dim_sizes();
  dims.insert(dims.end(), id.begin(), id.end());
  dims.insert(dims.end(), pd.begin() + axis + 1, pd.end());
  Tensor out(params.dtype(), *TensorShape::FromDims(dims));
  for (int64_t i = 0; i < out.NumElements(); ++i) {
    const std::vector<int64_t> o = test::Unravel(i, out.shape());
    std::vector<int64_t> ipos(o.begin() + axis,
                              o.begin() + axis + indices.dims());
    std::vector<int64_t> p(o.begin(), o.begin() + axis);
    p.push_back(indices.flat<I>()[test::Ravel(ipos, indices.shape())]);
    p.insert(p.end(), o.begin() + axis + indices.dims(), o.end());
    out.flat<T>()[i] = params.flat<T>()[test::Ravel(p, params.shape())];
  }
  return out;
}

TEST(GatherTest, MatchesNaiveLoopForAxesAndIndexShapes) {
  const Tensor params = RandomTensor<float>({5, 4, 3}, 1);
  const Tensor idx1 = Tensor::Vector<int32_t>({4, 0, 0, 2});
  const Tensor idx2 = Tensor::Matrix<int64_t>({{1, 2}, {0, 1}, {2, 2}});
  const Tensor idx0 = Tensor::Scalar<int32_t>(2);
  Scope s = Scope::NewRootScope();
  std::vector<Output> ys = {
      ops::Gather(s, params, idx1), ops::Gather(s, params, idx2, 1),
      ops::Gather(s, params, idx2, -1), ops::Gather(s, params, idx0),
      ops::Gather(s, params, Tensor(DataType::kInt32, {0}))};
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(ys[1].shape(), PartialTensorShape({5, 3, 2, 3}));
  auto got = test::RunGraph(s, {}, ys);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(TensorsEqual<float>(
      (*got)[0], NaiveGather<float, int32_t>(params, idx1, 0)));
  EXPECT_TRUE(TensorsEqual<float>(
      (*got)[1], NaiveGather<float, int64_t>(params, idx2, 1)));
  EXPECT_TRUE(TensorsEqual<float>(
      (*got)[2], NaiveGather<float, int64_t>(params, idx2, 2)));
  EXPECT_TRUE(TensorsEqual<float>(
      (*got)[3], NaiveGather<float, int32_t>(params, idx0, 0)));
  EXPECT_EQ((*got)[4].shape(), TensorShape({0, 4, 3}));
}

TEST(GatherTest, LargeGatherRunsInParallelAndMatches) {
  const Tensor params = RandomTensor<double>({1000, 130}, 2);
  std::vector<int64_t> idx;
  for (int i = 0; i < 3000; ++i) idx.push_back((i * 7919) % 1000);
  const Tensor indices = Tensor::Vector<int64_t>(idx);
  Scope s = Scope::NewRootScope();
  auto got = RunOne(s, ops::Gather(s, params, indices));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(TensorsEqual<double>(
      *got, NaiveGather<double, int64_t>(params, indices, 0)));
}

TEST(GatherTest, OutOfRangeIndexNamesIndexPositionAndRange) {
  Scope s = Scope::NewRootScope();
  Output idx = ops::Placeholder(s, DataType::kInt32);
  Output y = ops::Gather(s, RandomTensor<float>({5, 2}, 1), idx);
  auto got = RunOne(s, y, {{idx, Tensor::Matrix<int32_t>({{0, 1}, {7, 2}})}});
  EXPECT_TRUE(HasError(got.status(), absl::StatusCode::kInvalidArgument,
                       {"indices[1,0] = 7", "[0, 5)"}));
  got = RunOne(s, y, {{idx, Tensor::Vector<int32_t>({-1})}});
  EXPECT_TRUE(HasError(got.status(), absl::StatusCode::kInvalidArgument,
                       {"indices[0] = -1", "[0, 5)"}));
}

TEST(UnsortedSegmentSumTest, MatchesNaiveSums) {
  for (int64_t inner : {3, 500}) {
    const Tensor data = RandomTensor<float>({6, inner}, 3);
    const Tensor ids = Tensor::Vector<int32_t>({2, 0, 2, -1, 3, 0});
    const int64_t num = 5;
    std::vector<float> want(num * inner, 0.0f);
    for (int i = 0; i < 6; ++i) {
      const int id = ids.flat<int32_t>()[i];
      if (id < 0) continue;
      for (int64_t c = 0; c < inner; ++c) {
        want[id * inner + c] += data.flat<float>()[i * inner + c];
      }
    }
    Scope s = Scope::NewRootScope();
    Output y = ops::UnsortedSegmentSum(s, data, ids, num);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(y.shape(), PartialTensorShape({5, inner}));
    auto got = RunOne(s, y);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(
        TensorsEqual<float>(*got, MakeTensor<float>({num, inner}, want)));
  }
  // Ids of rank 2 over data [2, 2, 3]; an id too large is an error.
  Scope s = Scope::NewRootScope();
  Output ids = ops::Placeholder(s, DataType::kInt64);
  Output y =
      ops::UnsortedSegmentSum(s, RandomTensor<int32_t>({2, 2, 3}, 4), ids, 3);
  auto got = RunOne(s, y, {{ids, Tensor::Matrix<int64_t>({{0, 1}, {3, 0}})}});
  EXPECT_TRUE(HasError(got.status(), absl::StatusCode::kInvalidArgument,
                       {"segment_ids[1,0] = 3", "num_segments 3"}));
}

TEST(OneHotTest, MatchesDefinitionForEveryAxis) {
  const Tensor indices = Tensor::Matrix<int32_t>({{0, 2}, {5, -1}, {1, 1}});
  const int64_t depth = 3;
  for (int64_t axis : {-1, 0, 1, 2}) {
    Scope s = Scope::NewRootScope();
    Output y =
        ops::OneHot(s, indices, static_cast<int32_t>(depth), 1.5f, -1.0f, axis);
    ASSERT_TRUE(s.ok()) << s.status();
    auto got = RunOne(s, y);
    ASSERT_TRUE(got.ok()) << got.status();
    const int a = axis == -1 ? 2 : static_cast<int>(axis);
    std::vector<int64_t> dims = {3, 2};
    dims.insert(dims.begin() + a, depth);
    ASSERT_EQ(got->shape(), *TensorShape::FromDims(dims));
    EXPECT_EQ(y.shape(), PartialTensorShape(got->shape()));
    for (int64_t i = 0; i < got->NumElements(); ++i) {
      std::vector<int64_t> p = test::Unravel(i, got->shape());
      const int64_t d = p[a];
      p.erase(p.begin() + a);
      const int32_t index =
          indices.flat<int32_t>()[test::Ravel(p, indices.shape())];
      EXPECT_EQ(got->flat<float>()[i], index == d ? 1.5f : -1.0f) << i;
    }
  }
}

TEST(RangeTest, IntegerAndFloatingRanges) {
  Scope s = Scope::NewRootScope();
  Output a = ops::Range(s, 0, 5);
  Output b = ops::Range(s, 10, 1, -3);
  Output c = ops::Range(s, 0.5f, 2.0f, 0.5f);
  Output d = ops::Range(s, int64_t{3}, int64_t{3}, int64_t{1});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(b.shape(), PartialTensorShape({3}));
  auto got = test::RunGraph(s, {}, {a, b, c, d});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(TensorsEqual<int32_t>((*got)[0],
                                    Tensor::Vector<int32_t>({0, 1, 2, 3, 4})));
  EXPECT_TRUE(
      TensorsEqual<int32_t>((*got)[1], Tensor::Vector<int32_t>({10, 7, 4})));
  EXPECT_TRUE(TensorsEqual<float>((*got)[2],
                                  Tensor::Vector<float>({0.5f, 1.0f, 1.5f})));
  EXPECT_EQ((*got)[3].NumElements(), 0);
  ops::Range(s, 0, 5, -1);
  EXPECT_TRUE(
      HasError(s.status(), absl::StatusCode::kInvalidArgument, {"delta -1"}));
}

}  // namespace
}  // namespace distflow
