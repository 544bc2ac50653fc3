// The global step: one per graph, int64, not trainable, incremented once per
// applied step.
#include "distflow/train/global_step.h"

#include <vector>

#include "distflow/ops.h"
#include "distflow/session.h"
#include "distflow/train/optimizers.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"

namespace distflow {
namespace train {
namespace {

TEST(GlobalStepTest, CreatedOnceAndFoundAgain) {
  Scope s = Scope::NewRootScope();
  EXPECT_EQ(GetGlobalStep(s).status().code(), absl::StatusCode::kNotFound);
  ops::Variable step = GetOrCreateGlobalStep(s);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(step.var_name(), "global_step");
  EXPECT_EQ(step.dtype(), DataType::kInt64);
  EXPECT_EQ(step.shape(), PartialTensorShape({}));
  // Another scope of the same graph finds the same variable.
  ops::Variable again = GetOrCreateGlobalStep(s.NewSubScope("tower"));
  EXPECT_EQ(again.handle(), step.handle());
  auto found = GetGlobalStep(s);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->handle(), step.handle());
  EXPECT_TRUE(ops::TrainableVariables(s).empty());
  ASSERT_EQ(ops::GlobalVariables(s).size(), 1u);
}

TEST(GlobalStepTest, IncrementsOncePerAppliedStep) {
  Scope s = Scope::NewRootScope();
  ops::Variable step = GetOrCreateGlobalStep(s);
  ops::Variable w(s, {1.0f, 2.0f});
  ops::Variable b(s, 0.5f);
  AdamOptimizer opt(0.1);
  auto train = opt.ApplyGradients(s,
                                  {{Gradient(ops::Const(s, {1.0f, 1.0f})), w},
                                   {Gradient(ops::Const(s, 1.0f)), b}},
                                  step);
  ASSERT_TRUE(train.ok()) << train.status();
  auto session = test::InitializedSession(s);
  ASSERT_TRUE(session.ok()) << session.status();
  for (int64_t i = 1; i <= 3; ++i) {
    ASSERT_TRUE((*session)->RunTargets({*train}).ok());
    auto got = (*session)->Run({step});
    ASSERT_TRUE(got.ok());
    EXPECT_EQ((*got)[0].scalar<int64_t>(), i);
  }
}

}  // namespace
}  // namespace train
}  // namespace distflow
