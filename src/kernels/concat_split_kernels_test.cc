// Concat, Split, Stack (Pack) and Unstack (Unpack) against naive loops.
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
using test::RandomTensor;
using test::RunOne;
using test::TensorsEqual;

// Concatenation along `axis` by walking the output's positions.
template <typename T>
Tensor NaiveConcat(const std::vector<Tensor>& xs, int axis) {
  std::vector<int64_t> dims = xs[0].shape().dim_sizes();
  dims[axis] = 0;
  for (const Tensor& x : xs) dims[axis] += x.dim_size(axis);
  Tensor out(xs[0].dtype(), *TensorShape::FromDims(dims));
  for (int64_t i = 0; i < out.NumElements(); ++i) {
    std::vector<int64_t> p = test::Unravel(i, out.shape());
    size_t k = 0;
    while (p[axis] >= xs[k].dim_size(axis)) p[axis] -= xs[k++].dim_size(axis);
    out.flat<T>()[i] = xs[k].flat<T>()[test::Ravel(p, xs[k].shape())];
  }
  return out;
}

TEST(ConcatTest, MatchesNaiveLoopAlongEveryAxis) {
  uint32_t seed = 1;
  for (int axis = -3; axis < 3; ++axis) {
    const int a = axis < 0 ? axis + 3 : axis;
    std::vector<Tensor> xs;
    for (int64_t len : {2, 1, 3}) {
      std::vector<int64_t> dims = {2, 3, 4};
      dims[a] = len;
      xs.push_back(RandomTensor<float>(*TensorShape::FromDims(dims), seed++));
    }
    Scope s = Scope::NewRootScope();
    Output y = ops::Concat(s, {xs[0], xs[1], xs[2]}, axis);
    ASSERT_TRUE(s.ok()) << s.status();
    auto got = RunOne(s, y);
    ASSERT_TRUE(got.ok()) << got.status();
    const Tensor want = NaiveConcat<float>(xs, a);
    EXPECT_EQ(y.shape(), PartialTensorShape(want.shape()));
    EXPECT_TRUE(TensorsEqual<float>(*got, want)) << "axis " << axis;
  }
}

TEST(ConcatTest, FedAxisAndStringsAndErrors) {
  Scope s = Scope::NewRootScope();
  Output axis = ops::Placeholder(s, DataType::kInt32);
  Tensor a(DataType::kString, {1, 2}), b(DataType::kString, {1, 1});
  a.flat<std::string>()[0] = "a";
  a.flat<std::string>()[1] = "b";
  b.flat<std::string>()[0] = "c";
  Output y = ops::Concat(s, {a, b}, axis);
  EXPECT_EQ(y.shape(), PartialTensorShape({-1, -1}));
  auto got = RunOne(s, y, {{axis, Tensor::Scalar<int32_t>(1)}});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(
      TensorsEqual<std::string>(*got, NaiveConcat<std::string>({a, b}, 1)));
  got = RunOne(s, y, {{axis, Tensor::Scalar<int32_t>(0)}});
  EXPECT_TRUE(HasError(got.status(), absl::StatusCode::kInvalidArgument,
                       {"value 1", "[1,1]", "[1,2]"}));
  ops::Concat(s, {a, b}, 0);
  EXPECT_TRUE(HasError(s.status(), absl::StatusCode::kInvalidArgument,
                       {"Concat", "input 1"}));
}

TEST(SplitTest, PartsConcatenateBackToTheInput) {
  uint32_t seed = 1;
  for (int axis : {0, 1, 2, -1}) {
    const Tensor x = RandomTensor<int64_t>({4, 6, 2}, seed++);
    const int a = axis < 0 ? axis + 3 : axis;
    const int64_t n = 2;
    Scope s = Scope::NewRootScope();
    std::vector<Output> parts = ops::Split(s, axis, x, n);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_EQ(parts.size(), 2u);
    auto got = test::RunGraph(s, {}, parts);
    ASSERT_TRUE(got.ok()) << got.status();
    for (int i = 0; i < n; ++i) {
      std::vector<int64_t> dims = {4, 6, 2};
      dims[a] /= n;
      EXPECT_EQ((*got)[i].shape(), *TensorShape::FromDims(dims));
      EXPECT_EQ(parts[i].shape(),
                PartialTensorShape(*TensorShape::FromDims(dims)));
    }
    EXPECT_TRUE(TensorsEqual<int64_t>(NaiveConcat<int64_t>(*got, a), x));
  }
  Scope s = Scope::NewRootScope();
  ops::Split(s, 1, RandomTensor<float>({2, 5}, 1), 2);
  EXPECT_TRUE(HasError(s.status(), absl::StatusCode::kInvalidArgument,
                       {"cannot split dimension 1", "[2,5]"}));
}

TEST(StackTest, StackAndUnstackAlongEveryAxis) {
  uint32_t seed = 1;
  for (int axis : {0, 1, 2, -1}) {
    std::vector<Tensor> xs;
    for (int i = 0; i < 3; ++i)
      xs.push_back(RandomTensor<float>({2, 4}, seed++));
    Scope s = Scope::NewRootScope();
    Output y = ops::Stack(s, {xs[0], xs[1], xs[2]}, axis);
    std::vector<Output> back = ops::Unstack(s, y, -1, axis);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_EQ(back.size(), 3u);
    std::vector<Output> fetch = back;
    fetch.push_back(y);
    auto got = test::RunGraph(s, {}, fetch);
    ASSERT_TRUE(got.ok()) << got.status();
    // Stacking is concatenation of the inputs with a size-1 axis inserted.
    const int a = axis < 0 ? axis + 3 : axis;
    std::vector<Tensor> expanded;
    for (const Tensor& x : xs) {
      std::vector<int64_t> dims = {2, 4};
      dims.insert(dims.begin() + a, 1);
      expanded.push_back(*x.Reshape(*TensorShape::FromDims(dims)));
    }
    EXPECT_TRUE(
        TensorsEqual<float>((*got)[3], NaiveConcat<float>(expanded, a)));
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(TensorsEqual<float>((*got)[i], xs[i])) << "axis " << axis;
    }
  }
}

}  // namespace
}  // namespace distflow
