// Minimize end to end: every optimizer fits y = 3x + 2 by least squares
// through a real local session, differentiating the loss with Gradients.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "distflow/ops.h"
#include "distflow/session.h"
#include "distflow/train/clip.h"
#include "distflow/train/global_step.h"
#include "distflow/train/optimizer.h"
#include "distflow/train/optimizers.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"

namespace distflow {
namespace train {
namespace {

using test::HasError;

// A linear model and its mean squared error on 16 points of y = 3x + 2.
struct Regression {
  explicit Regression(const Scope& s)
      : w(s.WithOpName("w"), 0.0f), b(s.WithOpName("b"), 0.0f) {
    std::vector<float> xs, ys;
    for (int i = 0; i < 16; ++i) {
      xs.push_back(-1.0f + i / 7.5f);
      ys.push_back(3.0f * xs.back() + 2.0f);
    }
    Output x = ops::Const(s, Tensor::Vector<float>(xs));
    Output y = ops::Const(s, Tensor::Vector<float>(ys));
    Output pred = ops::Add(s, ops::Mul(s, x, w), b);
    loss = ops::Mean(s.WithOpName("loss"), ops::Square(s, ops::Sub(s, pred, y)),
                     0);
  }
  ops::Variable w, b;
  Output loss;
};

struct Fit {
  float w = NAN, b = NAN, loss = NAN;
  int64_t step = -1;
};

// Runs `steps` steps of `opt` minimizing the regression loss.
Fit Train(Optimizer* opt, int steps) {
  Scope s = Scope::NewRootScope();
  ops::Variable global_step = GetOrCreateGlobalStep(s);
  Regression model(s);
  auto train = opt->Minimize(s, model.loss, global_step);
  EXPECT_TRUE(train.ok()) << opt->name() << ": " << train.status();
  if (!train.ok()) return {};
  auto session = test::InitializedSession(s);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return {};
  for (int i = 0; i < steps; ++i) {
    absl::Status st = (*session)->RunTargets({*train});
    EXPECT_TRUE(st.ok()) << opt->name() << ": " << st;
    if (!st.ok()) return {};
  }
  auto got = (*session)->Run({model.w, model.b, model.loss, global_step});
  EXPECT_TRUE(got.ok()) << got.status();
  if (!got.ok()) return {};
  return {(*got)[0].scalar<float>(), (*got)[1].scalar<float>(),
          (*got)[2].scalar<float>(), (*got)[3].scalar<int64_t>()};
}

void ExpectConverges(Optimizer* opt, int steps, float tolerance = 0.02f) {
  Fit fit = Train(opt, steps);
  EXPECT_NEAR(fit.w, 3.0f, tolerance) << opt->name();
  EXPECT_NEAR(fit.b, 2.0f, tolerance) << opt->name();
  EXPECT_EQ(fit.step, steps) << opt->name();
}

TEST(MinimizeTest, GradientDescentConverges) {
  GradientDescentOptimizer opt(0.5);
  ExpectConverges(&opt, 200);
}
TEST(MinimizeTest, MomentumConverges) {
  MomentumOptimizer opt(0.05, 0.9);
  ExpectConverges(&opt, 300);
}
TEST(MinimizeTest, NesterovMomentumConverges) {
  MomentumOptimizer opt(0.05, 0.9, /*use_nesterov=*/true);
  ExpectConverges(&opt, 300);
}
TEST(MinimizeTest, AdagradConverges) {
  AdagradOptimizer opt(1.0);
  ExpectConverges(&opt, 500);
}
TEST(MinimizeTest, AdamConverges) {
  AdamOptimizer opt(0.1);
  ExpectConverges(&opt, 600);
}
TEST(MinimizeTest, RMSPropConverges) {
  RMSPropOptimizer opt(0.01);
  ExpectConverges(&opt, 1000, 0.05f);
}
TEST(MinimizeTest, FtrlConverges) {
  FtrlOptimizer opt(1.0);
  ExpectConverges(&opt, 800);
}

TEST(MinimizeTest, ComputeGradientsMatchesTheAnalyticGradient) {
  Scope s = Scope::NewRootScope();
  Regression model(s);
  ops::Variable unused(s.WithOpName("unused"), 1.0f);
  GradientDescentOptimizer opt(0.1);
  auto grads = opt.ComputeGradients(s, model.loss);
  ASSERT_TRUE(grads.ok()) << grads.status();
  // Every trainable variable, in creation order; "unused" has no gradient.
  ASSERT_EQ(grads->size(), 3u);
  EXPECT_EQ((*grads)[0].second.var_name(), "w");
  EXPECT_EQ((*grads)[1].second.var_name(), "b");
  EXPECT_FALSE((*grads)[2].first.has_value());
  ASSERT_TRUE((*grads)[0].first.has_value() && (*grads)[1].first.has_value());
  auto session = test::InitializedSession(s);
  ASSERT_TRUE(session.ok()) << session.status();
  auto got =
      (*session)->Run({(*grads)[0].first.dense(), (*grads)[1].first.dense()});
  ASSERT_TRUE(got.ok()) << got.status();
  // At w = b = 0: dL/dw = mean(-2 x y), dL/db = mean(-2 y).
  double dw = 0, db = 0;
  for (int i = 0; i < 16; ++i) {
    const double x = -1.0 + i / 7.5, y = 3 * x + 2;
    dw += -2 * x * y / 16;
    db += -2 * y / 16;
  }
  EXPECT_NEAR((*got)[0].scalar<float>(), dw, 1e-5);
  EXPECT_NEAR((*got)[1].scalar<float>(), db, 1e-5);
}

TEST(MinimizeTest, VarListLimitsWhatIsTrained) {
  Scope s = Scope::NewRootScope();
  Regression model(s);
  GradientDescentOptimizer opt(0.5);
  auto train = opt.Minimize(s, model.loss, ops::Variable(), {model.b});
  ASSERT_TRUE(train.ok()) << train.status();
  auto session = test::InitializedSession(s);
  ASSERT_TRUE(session.ok()) << session.status();
  for (int i = 0; i < 50; ++i)
    ASSERT_TRUE((*session)->RunTargets({*train}).ok());
  auto got = (*session)->Run({model.w, model.b});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].scalar<float>(), 0.0f);
  // With w fixed at 0 the best b is mean(y) = 2.
  EXPECT_NEAR((*got)[1].scalar<float>(), 2.0f, 1e-3);
}

TEST(MinimizeTest, ClippedGradientsStillConverge) {
  Scope s = Scope::NewRootScope();
  Regression model(s);
  GradientDescentOptimizer opt(0.2);
  auto grads = opt.ComputeGradients(s, model.loss);
  ASSERT_TRUE(grads.ok()) << grads.status();
  Output norm;
  auto clipped = ClipByGlobalNorm(s, *grads, 1.0, &norm);
  ASSERT_TRUE(clipped.ok()) << clipped.status();
  auto train = opt.ApplyGradients(s, *clipped);
  ASSERT_TRUE(train.ok()) << train.status();
  auto session = test::InitializedSession(s);
  ASSERT_TRUE(session.ok()) << session.status();
  // The first step is clipped: the variables move by at most lr * 1.
  ASSERT_TRUE((*session)->RunTargets({*train}).ok());
  auto first = (*session)->Run({model.w, model.b});
  ASSERT_TRUE(first.ok());
  const float w1 = (*first)[0].scalar<float>(),
              b1 = (*first)[1].scalar<float>();
  EXPECT_NEAR(std::sqrt(w1 * w1 + b1 * b1), 0.2f, 1e-5);
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE((*session)->RunTargets({*train}).ok());
  }
  auto got = (*session)->Run({model.w, model.b});
  ASSERT_TRUE(got.ok());
  EXPECT_NEAR((*got)[0].scalar<float>(), 3.0f, 0.02f);
  EXPECT_NEAR((*got)[1].scalar<float>(), 2.0f, 0.02f);
}

TEST(MinimizeTest, Errors) {
  Scope s = Scope::NewRootScope();
  GradientDescentOptimizer opt(0.1);
  Output loss = ops::Const(s, 1.0f);
  EXPECT_TRUE(HasError(opt.Minimize(s, loss).status(),
                       absl::StatusCode::kInvalidArgument, {"no variables"}));
  ops::Variable w(s.WithOpName("w"), 1.0f);
  EXPECT_TRUE(HasError(opt.Minimize(s, loss).status(),
                       absl::StatusCode::kInvalidArgument,
                       {"no gradient", "w"}));
  EXPECT_TRUE(HasError(opt.Minimize(s, ops::Const(s, 1)).status(),
                       absl::StatusCode::kInvalidArgument,
                       {"float32 or float64", "int32"}));
}

}  // namespace
}  // namespace train
}  // namespace distflow
