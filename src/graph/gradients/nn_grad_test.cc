// Gradients of the neural-network ops, each compared with finite differences
// by the shared checker: float64 where the kernel supports it, float32 (with a
// looser tolerance) for the oneDNN convolution and pooling kernels.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "distflow/gradients.h"
#include "distflow/ops.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"
#include "testing/gradient_checker.h"

namespace distflow {
namespace {

using test::MaxGradientError;
using test::RandomTensor;

// Random values in [-1, 1] kept at least `gap` away from 0, so that a finite
// difference step does not cross Relu's kink.
Tensor AwayFromZero(const TensorShape& shape, uint32_t seed, double gap) {
  Tensor t = RandomTensor<double>(shape, seed);
  for (double& v : t.flat<double>()) v = v < 0 ? v - gap : v + gap;
  return t;
}

// Distinct float values (a shuffled ramp, 0.01 apart) so that no pooling
// window has two maxima that a step of the finite difference could swap.
Tensor DistinctFloats(const TensorShape& shape, uint32_t seed) {
  std::vector<int> order(shape.num_elements());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  Tensor t(DataType::kFloat, shape);
  for (size_t i = 0; i < order.size(); ++i)
    t.flat<float>()[i] =
        0.01f * (order[i] - static_cast<int>(order.size()) / 2);
  return t;
}

using UnaryFn = Output (*)(const Scope&, const Input&);

TEST(NnGradTest, Activations) {
  for (UnaryFn fn :
       {UnaryFn{ops::Relu}, UnaryFn{ops::Sigmoid}, UnaryFn{ops::Tanh},
        UnaryFn{ops::Softmax}, UnaryFn{ops::LogSoftmax}}) {
    Scope s = Scope::NewRootScope();
    Output x = ops::Placeholder(s, DataType::kDouble);
    Output y = fn(s, x);
    SCOPED_TRACE(y.op().type());
    auto error = MaxGradientError(s, {x}, {AwayFromZero({3, 5}, 1, 0.01)}, y);
    ASSERT_TRUE(error.ok()) << error.status();
    EXPECT_LT(*error, 1e-6);
  }
}

TEST(NnGradTest, SparseSoftmaxCrossEntropyLossByLogits) {
  for (DataType label_type : {DataType::kInt32, DataType::kInt64}) {
    Scope s = Scope::NewRootScope();
    Output x = ops::Placeholder(s, DataType::kDouble);
    Tensor labels(label_type, {4});
    for (int64_t r = 0; r < 4; ++r) {
      if (label_type == DataType::kInt32) {
        labels.flat<int32_t>()[r] = static_cast<int32_t>(5 - r);
      } else {
        labels.flat<int64_t>()[r] = 5 - r;
      }
    }
    auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(s, x, labels);
    auto error =
        MaxGradientError(s, {x}, {RandomTensor<double>({4, 6}, 2)}, xent.loss);
    ASSERT_TRUE(error.ok()) << error.status();
    EXPECT_LT(*error, 1e-6);
  }
}

TEST(NnGradTest, SoftmaxCrossEntropyLossByLogitsAndLabels) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DataType::kDouble);
  Output p = ops::Placeholder(s, DataType::kDouble);
  auto xent = ops::SoftmaxCrossEntropyWithLogits(s, x, p);
  Tensor labels = RandomTensor<double>({4, 6}, 4);
  // Rows summing to 1: the backprop (softmax - labels) is the loss's gradient
  // for distributions.
  for (int64_t r = 0; r < 4; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < 6; ++j)
      sum += std::abs(labels.flat<double>()[r * 6 + j]);
    for (int64_t j = 0; j < 6; ++j)
      labels.flat<double>()[r * 6 + j] =
          std::abs(labels.flat<double>()[r * 6 + j]) / sum;
  }
  auto error = MaxGradientError(
      s, {x, p}, {RandomTensor<double>({4, 6}, 3), labels}, xent.loss);
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_LT(*error, 1e-6);
}

TEST(NnGradTest, BackpropOutputOfCrossEntropyHasNoGradient) {
  // Differentiating through the backprop output is not supported: the
  // logits get no gradient from it (TensorFlow's first-order behavior).
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DataType::kDouble);
  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(
      s, x, Tensor::Vector<int32_t>({0, 1}));
  auto grads = Gradients(s, {xent.backprop}, {x});
  ASSERT_TRUE(grads.ok()) << grads.status();
  ASSERT_EQ(grads->size(), 1u);
  if ((*grads)[0].has_value()) {
    auto got = test::RunOne(s, (*grads)[0].dense(),
                            {{x, RandomTensor<double>({2, 3}, 5)}});
    ASSERT_TRUE(got.ok()) << got.status();
    for (double v : got->flat<double>()) EXPECT_EQ(v, 0.0);
  }
}

struct ConvGradCase {
  TensorShape input, filter;
  std::vector<int64_t> strides;
  const char* padding;
  std::vector<int64_t> dilations = {1, 1, 1, 1};
};

TEST(NnGradTest, Conv2DByInputAndFilter) {
  const ConvGradCase cases[] = {
      {{2, 5, 5, 2}, {3, 3, 2, 3}, {1, 1, 1, 1}, "SAME"},
      {{1, 6, 7, 2}, {2, 3, 2, 2}, {1, 2, 2, 1}, "SAME"},  // odd padding
      {{1, 7, 6, 1}, {3, 2, 1, 2}, {1, 2, 1, 1}, "VALID"},
      {{1, 7, 7, 1}, {2, 2, 1, 2}, {1, 1, 1, 1}, "SAME", {1, 2, 2, 1}},
  };
  for (const ConvGradCase& c : cases) {
    SCOPED_TRACE(c.input.DebugString() + " * " + c.filter.DebugString() + " " +
                 c.padding);
    Scope s = Scope::NewRootScope();
    Output x = ops::Placeholder(s, DataType::kFloat);
    Output f = ops::Placeholder(s, DataType::kFloat);
    ops::Conv2DOptions options;
    options.dilations = c.dilations;
    Output y = ops::Conv2D(s, x, f, c.strides, c.padding, options);
    auto error = MaxGradientError(
        s, {x, f},
        {RandomTensor<float>(c.input, 6), RandomTensor<float>(c.filter, 7)}, y);
    ASSERT_TRUE(error.ok()) << error.status();
    EXPECT_LT(*error, 1e-2);
  }
}

TEST(NnGradTest, MaxPoolAndAvgPool) {
  for (const char* padding : {"SAME", "VALID"}) {
    for (bool max : {true, false}) {
      SCOPED_TRACE(std::string(max ? "MaxPool " : "AvgPool ") + padding);
      Scope s = Scope::NewRootScope();
      Output x = ops::Placeholder(s, DataType::kFloat);
      const std::vector<int64_t> ksize = {1, 3, 2, 1}, strides = {1, 2, 2, 1};
      Output y = max ? ops::MaxPool(s, x, ksize, strides, padding)
                     : ops::AvgPool(s, x, ksize, strides, padding);
      auto error =
          MaxGradientError(s, {x}, {DistinctFloats({2, 7, 6, 3}, 8)}, y);
      ASSERT_TRUE(error.ok()) << error.status();
      EXPECT_LT(*error, 1e-2);
    }
  }
}

TEST(NnGradTest, SmallCnnLossByBothFilters) {
  // The Fashion-MNIST CNN in miniature: conv, relu, max pool, conv, pool,
  // softmax cross-entropy over the flattened features' first classes.
  Scope s = Scope::NewRootScope();
  const Tensor x = RandomTensor<float>({2, 7, 7, 1}, 9);
  Output f1 = ops::Placeholder(s, DataType::kFloat);
  Output f2 = ops::Placeholder(s, DataType::kFloat);
  Output h = ops::Relu(s, ops::Conv2D(s, x, f1, {1, 1, 1, 1}, "SAME"));
  h = ops::MaxPool(s, h, {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME");
  h = ops::Conv2D(s, h, f2, {1, 1, 1, 1}, "SAME");
  h = ops::AvgPool(s, h, {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME");  // [2,2,2,3]
  Output logits = ops::Reshape(s, h, Tensor::Vector<int32_t>({2, 12}));
  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(
      s, logits, Tensor::Vector<int32_t>({3, 7}));
  auto error = MaxGradientError(s, {f1, f2},
                                {RandomTensor<float>({3, 3, 1, 2}, 10),
                                 RandomTensor<float>({3, 3, 2, 3}, 11)},
                                xent.loss);
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_LT(*error, 1e-2);
}

}  // namespace
}  // namespace distflow
