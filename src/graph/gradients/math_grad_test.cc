// Every differentiable math op's gradient against central finite differences
// (test::MaxGradientError), in float64, with input shapes known when building
// (constant reduction axes and reshapes) and unknown (computed at run time).
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "distflow/gradients.h"
#include "distflow/ops.h"
#include "distflow/scope.h"
#include "graph/graph.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"
#include "testing/gradient_checker.h"

namespace distflow {
namespace {

constexpr double kTolerance = 1e-6;

// A step small enough that the central difference's own error (about
// step^2 f''' / 6, large for 1/y or log near 0.5) stays far below kTolerance,
// and large enough that float64 rounding does too.
test::GradientCheckOptions Fine() {
  test::GradientCheckOptions options;
  options.delta = 1e-4;
  return options;
}

// Random float64 values in [-1, 1), or in [0.5, 1.5) if `positive`.
Tensor Values(const TensorShape& shape, uint32_t seed, bool positive = false) {
  Tensor t = test::MakeTensor<double>(
      shape, test::RandomValues<double>(shape.num_elements(), seed));
  if (positive) {
    for (double& v : t.flat<double>()) v = std::abs(v) + 0.5;
  }
  return t;
}

// How much of an input's shape the graph knows when it is built.
enum Known { kUnknown, kFull, kBatchUnknown };

// A float64 placeholder of `shape` as far as `known` says: nothing, all of it,
// or all but the first dimension (of a rank >= 2 shape).
Output Input64(const Scope& s, const TensorShape& shape, Known known) {
  PartialTensorShape p;
  if (known != kUnknown) {
    std::vector<int64_t> dims = shape.dim_sizes();
    if (known == kBatchUnknown && dims.size() >= 2) dims[0] = -1;
    p = *PartialTensorShape::FromDims(dims);
  }
  return ops::Placeholder(s, DataType::kDouble, p);
}

using BinaryOpFn = Output (*)(const Scope&, const Input&, const Input&);
struct BinaryCase {
  const char* name;
  BinaryOpFn op;
  bool positive_x, positive_y;
};
const BinaryCase kBinaryCases[] = {
    {"Add", ops::Add, false, false},
    {"Sub", ops::Sub, false, false},
    {"Mul", ops::Mul, false, false},
    {"Div", ops::Div, false, true},
    {"Pow", ops::Pow, true, false},
    {"Maximum", ops::Maximum, false, false},
    {"Minimum", ops::Minimum, false, false},
    {"SquaredDifference", ops::SquaredDifference, false, false},
};

class BinaryGradTest : public ::testing::TestWithParam<Known> {};

TEST_P(BinaryGradTest, BroadcastingOpsMatchFiniteDifferences) {
  const Known known = GetParam();
  const std::vector<std::pair<TensorShape, TensorShape>> shapes = {
      {{2, 3}, {2, 3}},    {{2, 3}, {3}}, {{2, 1}, {1, 3}}, {{}, {2, 3}},
      {{4, 1, 3}, {2, 1}}, {{3, 1}, {}},  {{1, 3}, {2, 3}}, {{4, 3}, {4, 1}},
  };
  for (const BinaryCase& c : kBinaryCases) {
    for (const auto& [xs, ys] : shapes) {
      SCOPED_TRACE(std::string(c.name) + " " + xs.DebugString() + " " +
                   ys.DebugString());
      Scope s = Scope::NewRootScope();
      Output x = Input64(s, xs, known), y = Input64(s, ys, known);
      Output z = c.op(s, x, y);
      auto error = test::MaxGradientError(
          s, {x, y}, {Values(xs, 1, c.positive_x), Values(ys, 2, c.positive_y)},
          z, Fine());
      ASSERT_TRUE(error.ok()) << error.status();
      EXPECT_LT(*error, kTolerance);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ShapesKnownOrNot, BinaryGradTest,
                         ::testing::Values(kUnknown, kFull, kBatchUnknown));

// x [batch, C] + b [C] with the batch size unknown: the static shapes settle
// the reduction axes, so the gradient needs no shape computation at run time.
TEST(BinaryGradTest, BiasLikeBroadcastNeedsNoRuntimeShapes) {
  Scope s = Scope::NewRootScope();
  Output x =
      ops::Placeholder(s, DataType::kDouble, PartialTensorShape({-1, 5}));
  Output b = ops::Placeholder(s, DataType::kDouble, PartialTensorShape({5}));
  Output y = ops::Mul(s, ops::Add(s, x, b), 2.0);
  auto grads = Gradients(s, {y}, {x, b});
  ASSERT_TRUE(grads.ok()) << grads.status();
  EXPECT_EQ((*grads)[1].dense().shape(), PartialTensorShape({5}));
  for (const auto& node : s.graph()->nodes()) {
    EXPECT_NE(node->op(), "BroadcastGradientArgs") << node->name();
    EXPECT_NE(node->op(), "Shape") << node->name();
  }
}

using UnaryOpFn = Output (*)(const Scope&, const Input&);
struct UnaryCase {
  const char* name;
  UnaryOpFn op;
  bool positive;
};

TEST(UnaryGradTest, MatchFiniteDifferences) {
  const UnaryCase cases[] = {
      {"Neg", ops::Neg, false},
      {"Exp", ops::Exp, false},
      {"Log", ops::Log, true},
      {"Sqrt", ops::Sqrt, true},
      {"Rsqrt", ops::Rsqrt, true},
      {"Square", ops::Square, false},
      {"Reciprocal", ops::Reciprocal, true},
      {"Abs", ops::Abs, false},
      {"Sign", ops::Sign, false},
  };
  for (const UnaryCase& c : cases) {
    SCOPED_TRACE(c.name);
    Scope s = Scope::NewRootScope();
    Output x = ops::Placeholder(s, DataType::kDouble);
    auto error = test::MaxGradientError(s, {x}, {Values({3, 4}, 5, c.positive)},
                                        c.op(s, x), Fine());
    ASSERT_TRUE(error.ok()) << error.status();
    EXPECT_LT(*error, kTolerance);
  }
}

TEST(CastGradTest, FlowsBetweenFloatTypes) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DataType::kDouble);
  Output y = ops::Cast(s, ops::Mul(s, ops::Cast(s, x, DataType::kFloat), 3.0f),
                       DataType::kDouble);
  auto error = test::MaxGradientError(s, {x}, {Values({5}, 6)}, y);
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_LT(*error, 1e-3);  // float32 rounding in the middle
}

TEST(SelectGradTest, RoutesTheGradientToTheChosenBranch) {
  Scope s = Scope::NewRootScope();
  Output t = ops::Placeholder(s, DataType::kDouble);
  Output e = ops::Placeholder(s, DataType::kDouble, PartialTensorShape({3}));
  Output cond = ops::Const(
      s, Tensor::Matrix<bool>({{true, false, true}, {false, false, true}}));
  Output y = ops::Select(s, cond, t, e);
  auto error = test::MaxGradientError(
      s, {t, e}, {Values({2, 3}, 7), Values({3}, 8)}, y, Fine());
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_LT(*error, kTolerance);
}

using ReduceFn = Output (*)(const Scope&, const Input&, const Input&,
                            const ops::ReduceOptions&);

class ReductionGradTest : public ::testing::TestWithParam<Known> {};

TEST_P(ReductionGradTest, MatchFiniteDifferences) {
  const Known known = GetParam();
  const struct {
    const char* name;
    ReduceFn op;
  } reductions[] = {{"Sum", ops::Sum},
                    {"Mean", ops::Mean},
                    {"Max", ops::Max},
                    {"Min", ops::Min}};
  const std::vector<std::vector<int32_t>> axes_list = {{0},    {1},       {-1},
                                                       {0, 2}, {0, 1, 2}, {}};
  const TensorShape shape({2, 3, 4});
  for (const auto& r : reductions) {
    for (const auto& axes : axes_list) {
      for (bool keep : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << r.name << " axes " << ::testing::PrintToString(axes)
                     << (keep ? " keep_dims" : ""));
        Scope s = Scope::NewRootScope();
        Output x = Input64(s, shape, known);
        Output y = r.op(s, x, Tensor::Vector<int32_t>(axes), {keep});
        auto error =
            test::MaxGradientError(s, {x}, {Values(shape, 9)}, y, Fine());
        ASSERT_TRUE(error.ok()) << error.status();
        EXPECT_LT(*error, kTolerance);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ShapesKnownOrNot, ReductionGradTest,
                         ::testing::Values(kUnknown, kFull, kBatchUnknown));

TEST(ReductionGradTest, AxesFedAtRunTime) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DataType::kDouble);
  // Axes computed by the graph: Shape of a [1] constant is [1] -> axis 1.
  Output y = ops::Mean(
      s, x, ops::Shape(s, ops::Const(s, Tensor::Vector<double>({0}))));
  auto error = test::MaxGradientError(s, {x}, {Values({3, 2}, 10)}, y, Fine());
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_LT(*error, kTolerance);
}

TEST(MaxGradTest, TiesShareTheGradient) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Const(s, Tensor::Matrix<double>({{1, 3, 3}, {2, 0, 1}}));
  Output y = ops::Max(s, x, 1);
  auto grads = Gradients(s, {y}, {x});
  ASSERT_TRUE(grads.ok()) << grads.status();
  auto got = test::RunOne(s, (*grads)[0].dense());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(test::TensorsEqual<double>(
      *got, Tensor::Matrix<double>({{0, 0.5, 0.5}, {1, 0, 0}})));
}

TEST(BiasAddGradTest, MatchesFiniteDifferences) {
  for (Known known : {kUnknown, kFull, kBatchUnknown}) {
    Scope s = Scope::NewRootScope();
    Output v = Input64(s, {2, 3, 4}, known);
    Output b = Input64(s, {4}, known);
    auto error = test::MaxGradientError(
        s, {v, b}, {Values({2, 3, 4}, 11), Values({4}, 12)},
        ops::BiasAdd(s, v, b), Fine());
    ASSERT_TRUE(error.ok()) << error.status();
    EXPECT_LT(*error, kTolerance);
  }
}

TEST(NoGradientTest, ComparisonsAndArgMaxStopGradients) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DataType::kDouble, PartialTensorShape({3}));
  Output mask = ops::Cast(s, ops::Greater(s, x, 0.0), DataType::kDouble);
  Output arg = ops::Cast(s, ops::ArgMax(s, x, 0), DataType::kDouble);
  Output y = ops::Add(s, ops::Sum(s, ops::Mul(s, mask, x), 0), arg);
  auto error = test::MaxGradientError(s, {x}, {Values({3}, 13)}, y, Fine());
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_LT(*error, kTolerance);
}

}  // namespace
}  // namespace distflow
