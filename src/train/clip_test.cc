// ClipByGlobalNorm against the norm computed here from the same values.
#include "distflow/train/clip.h"

#include <cmath>
#include <vector>

#include "distflow/ops.h"
#include "distflow/session.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"

namespace distflow {
namespace train {
namespace {

using test::HasError;
using test::MakeTensor;
using test::RandomValues;

double NormOf(const std::vector<std::vector<float>>& parts) {
  double sum = 0;
  for (const auto& p : parts) {
    for (float x : p) sum += static_cast<double>(x) * x;
  }
  return std::sqrt(sum);
}

// Clips a [2,3] dense gradient and a sparse one (two rows of 3) and checks
// the norm and every clipped value against the scale computed here.
void CheckClip(double clip_norm) {
  const std::vector<float> a = RandomValues<float>(6, 1);
  const std::vector<float> rows = RandomValues<float>(6, 2);
  Scope s = Scope::NewRootScope();
  Gradient dense(ops::Const(s, MakeTensor<float>({2, 3}, a)));
  IndexedSlices slices{ops::Const(s, Tensor::Vector<int64_t>({4, 1})),
                       ops::Const(s, MakeTensor<float>({2, 3}, rows)),
                       ops::Const(s, {5, 3})};
  auto clipped =
      ClipByGlobalNorm(s, {dense, Gradient(), Gradient(slices)}, clip_norm);
  ASSERT_TRUE(clipped.ok()) << clipped.status();
  ASSERT_EQ(clipped->gradients.size(), 3u);
  EXPECT_FALSE(clipped->gradients[1].has_value());
  ASSERT_TRUE(clipped->gradients[2].is_sparse());
  EXPECT_EQ(clipped->gradients[2].sparse().indices, slices.indices);
  auto got =
      test::RunGraph(s, {},
                     {clipped->global_norm, clipped->gradients[0].dense(),
                      clipped->gradients[2].sparse().values});
  ASSERT_TRUE(got.ok()) << got.status();
  const double norm = NormOf({a, rows});
  EXPECT_NEAR((*got)[0].scalar<float>(), norm, 1e-5 * norm);
  const double scale = norm > clip_norm ? clip_norm / norm : 1.0;
  for (int i = 0; i < 6; ++i) {
    EXPECT_NEAR((*got)[1].flat<float>()[i], a[i] * scale, 1e-6);
    EXPECT_NEAR((*got)[2].flat<float>()[i], rows[i] * scale, 1e-6);
  }
  if (norm <= clip_norm) {
    // Within the bound the gradients pass unchanged, exactly.
    for (int i = 0; i < 6; ++i) EXPECT_EQ((*got)[1].flat<float>()[i], a[i]);
  }
}

TEST(ClipTest, ScalesDownWhenTheNormExceedsTheBound) { CheckClip(0.5); }
TEST(ClipTest, KeepsGradientsWithinTheBound) { CheckClip(100.0); }

TEST(ClipTest, ZeroGradientsStayZero) {
  Scope s = Scope::NewRootScope();
  auto clipped = ClipByGlobalNorm(s, {Gradient(ops::Const(s, {0.f, 0.f}))},
                                  ops::Const(s, 1.0f));
  ASSERT_TRUE(clipped.ok()) << clipped.status();
  auto got = test::RunGraph(
      s, {}, {clipped->global_norm, clipped->gradients[0].dense()});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)[0].scalar<float>(), 0.f);
  EXPECT_TRUE(
      test::TensorsEqual<float>((*got)[1], Tensor::Vector<float>({0.f, 0.f})));
}

TEST(ClipTest, GradAndVarPairsKeepTheirVariables) {
  Scope s = Scope::NewRootScope();
  ops::Variable w(s, {1.f, 2.f});
  Output norm;
  auto clipped = ClipByGlobalNorm(s, {{Gradient(ops::Const(s, {3.f, 4.f})), w}},
                                  1.0, &norm);
  ASSERT_TRUE(clipped.ok()) << clipped.status();
  ASSERT_EQ(clipped->size(), 1u);
  EXPECT_EQ((*clipped)[0].second.handle(), w.handle());
  auto got = test::RunGraph(s, {}, {norm, (*clipped)[0].first.dense()});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FLOAT_EQ((*got)[0].scalar<float>(), 5.f);
  EXPECT_FLOAT_EQ((*got)[1].flat<float>()[0], 0.6f);
  EXPECT_FLOAT_EQ((*got)[1].flat<float>()[1], 0.8f);
}

TEST(ClipTest, Errors) {
  Scope s = Scope::NewRootScope();
  EXPECT_TRUE(HasError(ClipByGlobalNorm(s, {Gradient()}, 1.0).status(),
                       absl::StatusCode::kInvalidArgument, {"none"}));
  auto mixed =
      ClipByGlobalNorm(s,
                       {Gradient(ops::Const(s, {1.f})),
                        Gradient(ops::Const(s, Tensor::Vector<double>({1.0})))},
                       1.0);
  EXPECT_TRUE(HasError(mixed.status(), absl::StatusCode::kInvalidArgument,
                       {"float32", "float64"}));
}

}  // namespace
}  // namespace train
}  // namespace distflow
