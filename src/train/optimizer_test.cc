// Optimizers applying given gradients: the first steps of each match the
// update rule computed by hand here; slots are named, placed and initialized
// as documented; sparse gradients touch only their rows.
#include "distflow/train/optimizer.h"

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "distflow/ops.h"
#include "distflow/session.h"
#include "distflow/train/global_step.h"
#include "distflow/train/optimizers.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"

namespace distflow {
namespace train {
namespace {

using test::HasError;

const std::vector<float> kInitial = {1.0f, -2.0f, 0.5f};
const std::vector<std::vector<float>> kGrads = {{0.5f, -1.0f, 0.0f},
                                                {0.2f, 0.4f, -3.0f}};

// Applies kGrads with `opt` to a variable starting at kInitial and returns
// its value after each step.
std::vector<std::vector<float>> TwoSteps(Optimizer* opt) {
  Scope s = Scope::NewRootScope();
  ops::Variable w(s.WithOpName("w"), Tensor::Vector<float>(kInitial));
  Output g = ops::Placeholder(s, DataType::kFloat, {3});
  auto train = opt->ApplyGradients(s, {{Gradient(g), w}});
  EXPECT_TRUE(train.ok()) << train.status();
  if (!train.ok()) return {};
  auto session = test::InitializedSession(s);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return {};
  std::vector<std::vector<float>> values;
  for (const auto& grad : kGrads) {
    // A read in the same run could happen before the update: fetch after.
    EXPECT_TRUE(
        (*session)->Run({{g, Tensor::Vector<float>(grad)}}, {}, {*train}).ok());
    auto out = (*session)->Run({w});
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) return {};
    auto f = (*out)[0].flat<float>();
    values.emplace_back(f.begin(), f.end());
  }
  return values;
}

// The reference: `step(w, g, t)` updates one element (its own state captured
// per element by index) at step t = 1, 2.
using RefStep = std::function<double(int i, double w, double g, int t)>;

void ExpectSteps(Optimizer* opt, const RefStep& step) {
  const auto got = TwoSteps(opt);
  ASSERT_EQ(got.size(), 2u);
  for (int i = 0; i < 3; ++i) {
    double w = kInitial[i];
    for (int t = 1; t <= 2; ++t) {
      w = step(i, w, kGrads[t - 1][i], t);
      EXPECT_NEAR(got[t - 1][i], w, 1e-6 * (1 + std::abs(w)))
          << opt->name() << ": element " << i << " after step " << t;
    }
  }
}

TEST(OptimizerTest, GradientDescentFirstSteps) {
  GradientDescentOptimizer opt(0.1);
  ExpectSteps(&opt, [](int, double w, double g, int) { return w - 0.1 * g; });
}

TEST(OptimizerTest, MomentumFirstSteps) {
  for (bool nesterov : {false, true}) {
    MomentumOptimizer opt(0.1, 0.9, nesterov);
    double accum[3] = {0, 0, 0};
    ExpectSteps(&opt, [&](int i, double w, double g, int) {
      accum[i] = 0.9 * accum[i] + g;
      return nesterov ? w - 0.1 * g - 0.1 * 0.9 * accum[i] : w - 0.1 * accum[i];
    });
  }
}

TEST(OptimizerTest, AdagradFirstSteps) {
  AdagradOptimizer opt(0.5, /*initial_accumulator_value=*/0.1);
  double accum[3] = {0.1, 0.1, 0.1};
  ExpectSteps(&opt, [&](int i, double w, double g, int) {
    accum[i] += g * g;
    return w - 0.5 * g / std::sqrt(accum[i]);
  });
}

TEST(OptimizerTest, AdamFirstSteps) {
  AdamOptimizer opt(0.01, 0.9, 0.999, 1e-8);
  double m[3] = {0, 0, 0}, v[3] = {0, 0, 0};
  ExpectSteps(&opt, [&](int i, double w, double g, int t) {
    // The paper's form: bias-corrected moments (epsilon scaled as TensorFlow
    // does, by the correction of v).
    m[i] = 0.9 * m[i] + 0.1 * g;
    v[i] = 0.999 * v[i] + 0.001 * g * g;
    const double c1 = 1 - std::pow(0.9, t), c2 = 1 - std::pow(0.999, t);
    return w -
           0.01 * (m[i] / c1) / (std::sqrt(v[i] / c2) + 1e-8 / std::sqrt(c2));
  });
}

TEST(OptimizerTest, RMSPropFirstSteps) {
  RMSPropOptimizer opt(0.01, /*decay=*/0.9, /*momentum=*/0.5,
                       /*epsilon=*/1e-10);
  double ms[3] = {1, 1, 1}, mom[3] = {0, 0, 0};
  ExpectSteps(&opt, [&](int i, double w, double g, int) {
    ms[i] = 0.9 * ms[i] + 0.1 * g * g;
    mom[i] = 0.5 * mom[i] + 0.01 * g / std::sqrt(ms[i] + 1e-10);
    return w - mom[i];
  });
}

TEST(OptimizerTest, FtrlFirstSteps) {
  FtrlOptimizer opt(0.5, /*learning_rate_power=*/-0.5,
                    /*initial_accumulator_value=*/0.1, /*l1=*/0.05,
                    /*l2=*/0.1);
  double n[3] = {0.1, 0.1, 0.1}, z[3] = {0, 0, 0};
  ExpectSteps(&opt, [&](int i, double w, double g, int) {
    // McMahan et al., Algorithm 1, with per-coordinate rate 0.5 / sqrt(n).
    const double sigma = (std::sqrt(n[i] + g * g) - std::sqrt(n[i])) / 0.5;
    z[i] += g - sigma * w;
    n[i] += g * g;
    if (std::abs(z[i]) <= 0.05) return 0.0;
    return -(z[i] - (z[i] > 0 ? 0.05 : -0.05)) /
           (std::sqrt(n[i]) / 0.5 + 2 * 0.1);
  });
}

TEST(OptimizerTest, LearningRateMayBeAnOutput) {
  Scope s = Scope::NewRootScope();
  ops::Variable w(s, {1.0f, 2.0f});
  Output lr = ops::Placeholder(s, DataType::kFloat, {});
  GradientDescentOptimizer opt(lr);
  auto train =
      opt.ApplyGradients(s, {{Gradient(ops::Const(s, {1.0f, -1.0f})), w}});
  ASSERT_TRUE(train.ok()) << train.status();
  auto session = test::InitializedSession(s);
  ASSERT_TRUE(session.ok()) << session.status();
  for (float rate : {0.5f, 0.25f}) {
    ASSERT_TRUE(
        (*session)->Run({{lr, Tensor::Scalar(rate)}}, {}, {*train}).ok());
  }
  auto got = (*session)->Run({w});
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(test::TensorsEqual<float>((*got)[0],
                                        Tensor::Vector<float>({0.25f, 2.75f})));
}

TEST(OptimizerTest, Float64Variables) {
  Scope s = Scope::NewRootScope();
  ops::Variable w(s, Tensor::Vector<double>({1.0, 2.0}));
  AdamOptimizer opt(0.1);
  auto train = opt.ApplyGradients(
      s, {{Gradient(ops::Const(s, Tensor::Vector<double>({1.0, -1.0}))), w}});
  ASSERT_TRUE(train.ok()) << train.status();
  auto session = test::InitializedSession(s);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->RunTargets({*train}).ok());
  auto got = (*session)->Run({w});
  ASSERT_TRUE(got.ok());
  // Adam's first step moves each element by about lr against its gradient.
  EXPECT_NEAR((*got)[0].flat<double>()[0], 0.9, 1e-6);
  EXPECT_NEAR((*got)[0].flat<double>()[1], 2.1, 1e-6);
}

}  // namespace
}  // namespace train
}  // namespace distflow
