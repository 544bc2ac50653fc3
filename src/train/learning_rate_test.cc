// Learning-rate schedules against the formulas evaluated here, and a schedule
// driving an optimizer through the global step.
#include "distflow/train/learning_rate.h"

#include <cmath>
#include <cstdint>
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

// The schedule's value at each of `steps`, fed as the global step.
std::vector<double> Evaluate(const Scope& s, const Output& step,
                             const Output& lr,
                             const std::vector<int64_t>& steps) {
  auto session = ClientSession::Create(s);
  EXPECT_TRUE(session.ok()) << session.status();
  std::vector<double> values;
  for (int64_t t : steps) {
    auto got = (*session)->Run({{step, Tensor::Scalar<int64_t>(t)}}, {lr});
    EXPECT_TRUE(got.ok()) << got.status();
    values.push_back(got.ok() ? (*got)[0].scalar<float>() : NAN);
  }
  return values;
}

TEST(LearningRateTest, ExponentialDecay) {
  const std::vector<int64_t> steps = {0, 1, 5, 10, 19, 20, 25, 100};
  for (bool staircase : {false, true}) {
    Scope s = Scope::NewRootScope();
    Output step = ops::Placeholder(s, DataType::kInt64, {});
    Output lr = ExponentialDecay(s, 0.1, step, 10, 0.5, staircase);
    const std::vector<double> got = Evaluate(s, step, lr, steps);
    ASSERT_EQ(got.size(), steps.size());
    for (size_t i = 0; i < steps.size(); ++i) {
      double p = steps[i] / 10.0;
      if (staircase) p = std::floor(p);
      EXPECT_NEAR(got[i], 0.1 * std::pow(0.5, p), 1e-7)
          << "step " << steps[i] << (staircase ? " (staircase)" : "");
    }
  }
}

TEST(LearningRateTest, PiecewiseConstant) {
  Scope s = Scope::NewRootScope();
  Output step = ops::Placeholder(s, DataType::kInt64, {});
  Output lr = PiecewiseConstant(s, step, {10, 20}, {1.0, 0.5, 0.1});
  const std::vector<double> got =
      Evaluate(s, step, lr, {0, 10, 11, 20, 21, 1000});
  const std::vector<double> want = {1.0, 1.0, 0.5, 0.5, 0.1, 0.1};
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_FLOAT_EQ(got[i], want[i]) << "case " << i;
  }
}

TEST(LearningRateTest, InvalidArgumentsAreRecordedInTheScope) {
  Scope s = Scope::NewRootScope();
  Output step = ops::Placeholder(s, DataType::kInt64, {});
  EXPECT_FALSE(ExponentialDecay(s, 0.1, step, 0, 0.5).valid());
  EXPECT_TRUE(HasError(s.status(), absl::StatusCode::kInvalidArgument,
                       {"decay_steps", "0"}));
  Scope s2 = Scope::NewRootScope();
  Output step2 = ops::Placeholder(s2, DataType::kInt64, {});
  EXPECT_FALSE(PiecewiseConstant(s2, step2, {20, 10}, {1, 2, 3}).valid());
  EXPECT_TRUE(HasError(s2.status(), absl::StatusCode::kInvalidArgument,
                       {"increasing", "20, 10"}));
}

// Gradient descent at 1.0 for two steps, then at 0.5: a unit gradient moves
// the variable by 1, 1, 0.5, 0.5.
TEST(LearningRateTest, ScheduleDrivesAnOptimizer) {
  Scope s = Scope::NewRootScope();
  ops::Variable step = GetOrCreateGlobalStep(s);
  ops::Variable w(s, 0.0f);
  GradientDescentOptimizer opt(PiecewiseConstant(s, step, {1}, {1.0, 0.5}));
  auto train =
      opt.ApplyGradients(s, {{Gradient(ops::Const(s, 1.0f)), w}}, step);
  ASSERT_TRUE(train.ok()) << train.status();
  auto session = test::InitializedSession(s);
  ASSERT_TRUE(session.ok()) << session.status();
  for (float want : {-1.0f, -2.0f, -2.5f, -3.0f}) {
    ASSERT_TRUE((*session)->RunTargets({*train}).ok());
    auto got = (*session)->Run({w});
    ASSERT_TRUE(got.ok());
    EXPECT_FLOAT_EQ((*got)[0].scalar<float>(), want);
  }
}

}  // namespace
}  // namespace train
}  // namespace distflow
