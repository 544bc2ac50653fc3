// Finite-difference checks of the gradients of the array ops that rearrange,
// join, cut and index tensors; the sparse gradient of Gather; dropout's mask
// reuse.
#include <cstdint>
#include <vector>

#include "distflow/gradients.h"
#include "distflow/ops.h"
#include "distflow/session.h"
#include "graph/gradients/grad_registry.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"
#include "testing/gradient_checker.h"

namespace distflow {
namespace {

constexpr double kTolerance = 1e-6;

Tensor Doubles(const TensorShape& shape, uint32_t seed) {
  return test::RandomTensor<double>(shape, seed);
}

// The gradient error of y(x) for one float64 placeholder x fed `value`.
double ErrorOf(const Scope& s, const Output& x, const Tensor& value,
               const Output& y) {
  EXPECT_TRUE(s.ok()) << s.status();
  auto error = test::MaxGradientError(s, {x}, {value}, y);
  EXPECT_TRUE(error.ok()) << error.status();
  return error.ok() ? *error : 1e9;
}

TEST(TransformGradTest, Transpose) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DataType::kDouble);
  Output y = ops::Transpose(s, x, {2, 0, 1});
  EXPECT_LT(ErrorOf(s, x, Doubles({2, 3, 4}, 1), y), kTolerance);
}

TEST(TransformGradTest, ExpandDimsAndSqueeze) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DataType::kDouble);
  Output y = ops::Squeeze(s, ops::ExpandDims(s, x, 1), {2});
  EXPECT_LT(ErrorOf(s, x, Doubles({3, 1, 2}, 2), y), kTolerance);
}

TEST(TransformGradTest, ConcatAlongEachAxis) {
  for (int axis : {0, 1, -1}) {
    Scope s = Scope::NewRootScope();
    Output a = ops::Placeholder(s, DataType::kDouble);
    Output b = ops::Placeholder(s, DataType::kDouble);
    Output y = ops::Concat(s, {a, b, a}, axis);
    ASSERT_TRUE(s.ok()) << s.status();
    const TensorShape sa =
        axis == 0 ? TensorShape({1, 3}) : TensorShape({2, 1});
    const TensorShape sb =
        axis == 0 ? TensorShape({2, 3}) : TensorShape({2, 3});
    auto error =
        test::MaxGradientError(s, {a, b}, {Doubles(sa, 3), Doubles(sb, 4)}, y);
    ASSERT_TRUE(error.ok()) << error.status();
    EXPECT_LT(*error, kTolerance) << "axis " << axis;
  }
}

TEST(TransformGradTest, SplitWithAnUnusedPart) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DataType::kDouble);
  std::vector<Output> parts = ops::Split(s, 1, x, 3);
  ASSERT_EQ(parts.size(), 3u);
  Output y = ops::Concat(s, {parts[2], parts[0]}, 0);
  EXPECT_LT(ErrorOf(s, x, Doubles({2, 6}, 5), y), kTolerance);
}

TEST(TransformGradTest, SliceAndPad) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DataType::kDouble);
  Output sliced = ops::Slice(s, x, {1, 0, 2}, {2, -1, 1});
  EXPECT_LT(ErrorOf(s, x, Doubles({4, 3, 5}, 6), sliced), kTolerance);
  Scope s2 = Scope::NewRootScope();
  Output x2 = ops::Placeholder(s2, DataType::kDouble);
  Output padded = ops::Pad(s2, x2, {{1, 0}, {2, 3}});
  EXPECT_LT(ErrorOf(s2, x2, Doubles({2, 3}, 7), padded), kTolerance);
}

TEST(TransformGradTest, Tile) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DataType::kDouble);
  Output y = ops::Tile(s, x, {2, 1, 3});
  EXPECT_LT(ErrorOf(s, x, Doubles({2, 3, 2}, 8), y), kTolerance);
}

TEST(TransformGradTest, StackAndUnstack) {
  Scope s = Scope::NewRootScope();
  Output a = ops::Placeholder(s, DataType::kDouble);
  Output b = ops::Placeholder(s, DataType::kDouble);
  Output stacked = ops::Stack(s, {a, b, a}, 1);
  std::vector<Output> rows = ops::Unstack(s, stacked, 3, 1);
  ASSERT_EQ(rows.size(), 3u);
  Output y = ops::Stack(s, {rows[0], rows[1]}, 0);  // rows[2] unused
  auto error = test::MaxGradientError(
      s, {a, b}, {Doubles({2, 3}, 9), Doubles({2, 3}, 10)}, y);
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_LT(*error, kTolerance);
}

TEST(GatherGradTest, AxisZeroIsSparseAndCorrect) {
  Scope s = Scope::NewRootScope();
  Output params = ops::Placeholder(s, DataType::kDouble);
  // Index 3 repeats: its rows' gradients add up.
  Output y = ops::Gather(s, params, Tensor::Matrix<int32_t>({{3, 0}, {3, 1}}));
  auto grads = Gradients(s, {y}, {params});
  ASSERT_TRUE(grads.ok()) << grads.status();
  EXPECT_TRUE((*grads)[0].is_sparse());
  EXPECT_LT(ErrorOf(s, params, Doubles({5, 2, 3}, 11), y), kTolerance);
}

TEST(GatherGradTest, OtherAxesAreDense) {
  for (int64_t axis : {1, 2, -1}) {
    Scope s = Scope::NewRootScope();
    Output params = ops::Placeholder(s, DataType::kDouble,
                                     PartialTensorShape({-1, -1, -1}));
    Output y = ops::Gather(s, params, Tensor::Vector<int64_t>({2, 0, 2}), axis);
    auto grads = Gradients(s, {y}, {params});
    ASSERT_TRUE(grads.ok()) << grads.status();
    EXPECT_FALSE((*grads)[0].is_sparse());
    EXPECT_LT(ErrorOf(s, params, Doubles({2, 3, 3}, 12), y), kTolerance)
        << "axis " << axis;
  }
}

TEST(GatherGradTest, UnsortedSegmentSum) {
  Scope s = Scope::NewRootScope();
  Output data = ops::Placeholder(s, DataType::kDouble);
  // Id -1 drops its row: it gets no gradient.
  Output y = ops::UnsortedSegmentSum(
      s, data, Tensor::Matrix<int32_t>({{1, -1}, {1, 3}}), 4);
  EXPECT_LT(ErrorOf(s, data, Doubles({2, 2, 3}, 13), y), kTolerance);
}

// The gradient of dropout is the mask of the same step: fetched together with
// the output, it is 1 / (1 - rate) exactly where the output kept x.
TEST(DropoutGradTest, ReusesTheForwardMask) {
  if (!GradRegistry::Global()->Lookup("Mul").ok()) {
    GTEST_SKIP() << "Mul has no gradient yet in this build";
  }
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DataType::kFloat);
  Output y = ops::Dropout(s, x, 0.25f, /*seed=*/3);
  auto grads = Gradients(s, {y}, {x});
  ASSERT_TRUE(grads.ok()) << grads.status();
  auto session = ClientSession::Create(s);
  ASSERT_TRUE(session.ok());
  std::vector<float> ones(1000, 1.0f);
  const Tensor x_value = test::MakeTensor<float>({1000}, ones);
  for (int step = 0; step < 2; ++step) {
    auto got = (*session)->Run({{x, x_value}}, {y, (*grads)[0].dense()});
    ASSERT_TRUE(got.ok()) << got.status();
    for (int i = 0; i < 1000; ++i) {
      EXPECT_FLOAT_EQ((*got)[1].flat<float>()[i], (*got)[0].flat<float>()[i]);
    }
  }
}

}  // namespace
}  // namespace distflow
