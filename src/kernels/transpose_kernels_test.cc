// Transpose against a naive index loop; ExpandDims, Squeeze, Size and Rank.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "distflow/ops.h"
#include "gtest/gtest.h"
#include "kernels/index_test_util.h"
#include "kernels/kernel_test_util.h"

namespace distflow {
namespace {

using test::HasError;
using test::RandomTensor;
using test::RunOne;
using test::TensorsEqual;

template <typename T>
Tensor NaiveTranspose(const Tensor& x, const std::vector<int64_t>& perm) {
  std::vector<int64_t> dims;
  for (int64_t p : perm) dims.push_back(x.dim_size(static_cast<int>(p)));
  Tensor out(x.dtype(), *TensorShape::FromDims(dims));
  for (int64_t i = 0; i < out.NumElements(); ++i) {
    const std::vector<int64_t> o = test::Unravel(i, out.shape());
    std::vector<int64_t> in(o.size());
    for (size_t d = 0; d < perm.size(); ++d) in[perm[d]] = o[d];
    out.flat<T>()[i] = x.flat<T>()[test::Ravel(in, x.shape())];
  }
  return out;
}

TEST(TransposeTest, MatchesNaiveLoopForManyShapesAndPermutations) {
  std::mt19937 gen(7);
  const std::vector<std::vector<int64_t>> shapes = {
      {5},          {3, 4},    {1, 7},       {33, 65},
      {2, 3, 4},    {4, 1, 5}, {2, 3, 4, 5}, {3, 1, 2, 1, 4},
      {64, 40, 30}, {0, 3},    {300, 257},   {2, 70, 3, 130}};
  uint32_t seed = 1;
  for (const auto& dims : shapes) {
    std::vector<int64_t> perm(dims.size());
    std::iota(perm.begin(), perm.end(), 0);
    for (int trial = 0; trial < 4; ++trial) {
      std::shuffle(perm.begin(), perm.end(), gen);
      const Tensor x =
          RandomTensor<float>(*TensorShape::FromDims(dims), seed++);
      Scope s = Scope::NewRootScope();
      Output y = ops::Transpose(s, x, Tensor::Vector<int64_t>(perm));
      auto got = RunOne(s, y);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_TRUE(TensorsEqual<float>(*got, NaiveTranspose<float>(x, perm)))
          << x.shape().DebugString() << " perm "
          << Tensor::Vector<int64_t>(perm).DebugString();
    }
  }
}

TEST(TransposeTest, WorksForIntegersAndStrings) {
  Scope s = Scope::NewRootScope();
  Tensor strings(DataType::kString, {2, 3});
  for (int i = 0; i < 6; ++i)
    strings.flat<std::string>()[i] = std::to_string(i);
  const Tensor ints = RandomTensor<int64_t>({3, 2, 4}, 3);
  auto got = test::RunGraph(
      s, {},
      {ops::Transpose(s, strings, {1, 0}), ops::Transpose(s, ints, {2, 0, 1})});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(TensorsEqual<std::string>(
      (*got)[0], NaiveTranspose<std::string>(strings, {1, 0})));
  EXPECT_TRUE(TensorsEqual<int64_t>((*got)[1],
                                    NaiveTranspose<int64_t>(ints, {2, 0, 1})));
}

TEST(TransposeTest, InfersShapeAndRejectsBadPermutations) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DataType::kFloat, {2, -1, 4});
  Output y = ops::Transpose(s, x, {2, 0, 1});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(y.shape(), PartialTensorShape({4, 2, -1}));
  ops::Transpose(s, x, {0, 0, 1});
  EXPECT_TRUE(HasError(s.status(), absl::StatusCode::kInvalidArgument,
                       {"Transpose", "not a permutation"}));

  Scope s2 = Scope::NewRootScope();
  Output p = ops::Placeholder(s2, DataType::kInt32);
  Output fed = ops::Transpose(s2, Tensor::Matrix<float>({{1, 2}}), p);
  auto got = RunOne(s2, fed, {{p, Tensor::Vector<int32_t>({0, 2})}});
  EXPECT_TRUE(HasError(got.status(), absl::StatusCode::kInvalidArgument,
                       {"perm", "not a permutation"}));
}

TEST(ExpandDimsSqueezeTest, InsertAndRemoveDimensionsOfSizeOne) {
  Scope s = Scope::NewRootScope();
  const Tensor x = RandomTensor<float>({2, 3}, 5);
  Output e0 = ops::ExpandDims(s, x, 0);
  Output e_last = ops::ExpandDims(s, x, -1);
  Output e1 = ops::ExpandDims(s, x, 1);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(e0.shape(), PartialTensorShape({1, 2, 3}));
  EXPECT_EQ(e_last.shape(), PartialTensorShape({2, 3, 1}));
  EXPECT_EQ(e1.shape(), PartialTensorShape({2, 1, 3}));
  const Tensor y = RandomTensor<float>({1, 2, 1, 3, 1}, 6);
  Output all = ops::Squeeze(s, y);
  Output some = ops::Squeeze(s, y, {0, -1});
  EXPECT_EQ(all.shape(), PartialTensorShape({2, 3}));
  EXPECT_EQ(some.shape(), PartialTensorShape({2, 1, 3}));
  auto got = test::RunGraph(s, {}, {e0, e_last, e1, all, some});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(TensorsEqual<float>((*got)[0], *x.Reshape({1, 2, 3})));
  EXPECT_TRUE(TensorsEqual<float>((*got)[1], *x.Reshape({2, 3, 1})));
  EXPECT_TRUE(TensorsEqual<float>((*got)[2], *x.Reshape({2, 1, 3})));
  EXPECT_TRUE(TensorsEqual<float>((*got)[3], *y.Reshape({2, 3})));
  EXPECT_TRUE(TensorsEqual<float>((*got)[4], *y.Reshape({2, 1, 3})));

  ops::Squeeze(s, y, {1});
  EXPECT_TRUE(HasError(s.status(), absl::StatusCode::kInvalidArgument,
                       {"cannot squeeze dimension 1", "[1,2,1,3,1]"}));
}

TEST(SizeRankTest, CountElementsAndDimensions) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DataType::kFloat);
  auto got = test::RunGraph(
      s, {{x, RandomTensor<float>({3, 4, 5}, 1)}},
      {ops::Size(s, x), ops::Size(s, x, DataType::kInt64), ops::Rank(s, x)});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(TensorsEqual<int32_t>((*got)[0], Tensor::Scalar<int32_t>(60)));
  EXPECT_TRUE(TensorsEqual<int64_t>((*got)[1], Tensor::Scalar<int64_t>(60)));
  EXPECT_TRUE(TensorsEqual<int32_t>((*got)[2], Tensor::Scalar<int32_t>(3)));
}

}  // namespace
}  // namespace distflow
