// Finite-difference checks of the gradients of DynamicStitch and
// DynamicPartition.
#include <cstdint>
#include <random>
#include <vector>

#include "distflow/gradients.h"
#include "distflow/ops.h"
#include "gtest/gtest.h"
#include "testing/gradient_checker.h"

namespace distflow {
namespace {

Tensor RandomDoubles(const TensorShape& shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Tensor t(DataType::kDouble, shape);
  for (double& v : t.flat<double>()) v = dist(gen);
  return t;
}

TEST(DynamicStitchGradTest, MatchesFiniteDifferences) {
  Scope s = Scope::NewRootScope();
  auto a = ops::Placeholder(s, DataType::kDouble);
  auto b = ops::Placeholder(s, DataType::kDouble);
  auto y =
      ops::DynamicStitch(s,
                         {ops::Const(s, Tensor::Vector<int32_t>({4, 0})),
                          ops::Const(s, Tensor::Vector<int32_t>({1, 3, 2}))},
                         {a, b});
  auto error = test::MaxGradientError(s, {a, b},
                                      {RandomDoubles(TensorShape({2, 3}), 1),
                                       RandomDoubles(TensorShape({3, 3}), 2)},
                                      y);
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_LT(*error, 1e-8);
}

TEST(DynamicPartitionGradTest, MatchesFiniteDifferences) {
  for (int k = 0; k < 3; ++k) {
    Scope s = Scope::NewRootScope();
    auto x = ops::Placeholder(s, DataType::kDouble);
    auto parts = ops::DynamicPartition(
        s, x, Tensor::Vector<int32_t>({2, 0, 2, 1, 0, 2}), 3);
    auto error = test::MaxGradientError(
        s, {x}, {RandomDoubles(TensorShape({6, 2}), 3 + k)}, parts[k]);
    ASSERT_TRUE(error.ok()) << error.status();
    EXPECT_LT(*error, 1e-8) << "output " << k;
  }
}

TEST(DynamicPartitionGradTest, PartitionsOfHigherRank) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s, DataType::kDouble);
  auto parts = ops::DynamicPartition(
      s, x, Tensor::Matrix<int32_t>({{1, 0, 1}, {0, 0, 1}}), 2);
  auto y =
      ops::DynamicStitch(s,
                         {ops::Const(s, Tensor::Vector<int32_t>({3, 1, 0})),
                          ops::Const(s, Tensor::Vector<int32_t>({2, 4, 5}))},
                         {parts[0], parts[1]});
  auto error = test::MaxGradientError(
      s, {x}, {RandomDoubles(TensorShape({2, 3, 2}), 9)}, y);
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_LT(*error, 1e-8);
}

}  // namespace
}  // namespace distflow
