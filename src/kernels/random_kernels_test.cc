// Random ops: seeding, fresh samples per step, distributions; dropout; the
// weight initializers.
#include <cmath>
#include <cstdint>
#include <vector>

#include "distflow/ops.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"

namespace distflow {
namespace {

using test::HasError;
using test::RandomTensor;
using test::RunOne;
using test::TensorsEqual;

struct Moments {
  double mean = 0, var = 0, min = 1e300, max = -1e300;
};
template <typename T>
Moments MomentsOf(const Tensor& t) {
  Moments m;
  for (T v : t.flat<T>()) {
    m.mean += v;
    m.min = std::min<double>(m.min, v);
    m.max = std::max<double>(m.max, v);
  }
  m.mean /= t.NumElements();
  for (T v : t.flat<T>()) m.var += (v - m.mean) * (v - m.mean);
  m.var /= t.NumElements();
  return m;
}

using Maker = Output (*)(const Scope&, const Input&, DataType,
                         const ops::RandomSeed&);

TEST(RandomTest, SeededOpsRepeatAcrossSessionsAndAdvanceEachRun) {
  for (Maker make : {&ops::RandomUniform, &ops::RandomStandardNormal,
                     &ops::TruncatedNormal}) {
    for (DataType dtype : {DataType::kFloat, DataType::kDouble}) {
      Scope s = Scope::NewRootScope();
      Output seeded = make(s, {1000}, dtype, {42, 7});
      Output twin = make(s, {1000}, dtype, {42, 7});
      Output other = make(s, {1000}, dtype, {42, 8});
      Output unseeded = make(s, {1000}, dtype, {});
      ASSERT_TRUE(s.ok()) << s.status();
      auto session = ClientSession::Create(s);
      ASSERT_TRUE(session.ok());
      auto run1 = (*session)->Run({seeded, twin, other, unseeded});
      auto run2 = (*session)->Run({seeded, unseeded});
      auto again = RunOne(s, seeded);  // a new session: the same first sample
      auto fresh = RunOne(s, unseeded);
      ASSERT_TRUE(run1.ok() && run2.ok() && again.ok() && fresh.ok());
      EXPECT_TRUE((*run1)[0].Equals((*run1)[1]));  // same seeds, same numbers
      EXPECT_TRUE((*run1)[0].Equals(*again));
      EXPECT_FALSE((*run1)[0].Equals((*run1)[2]));
      EXPECT_FALSE((*run1)[0].Equals((*run2)[0]));  // each run is fresh
      EXPECT_FALSE((*run1)[3].Equals((*run2)[1]));
      EXPECT_FALSE((*run1)[3].Equals(*fresh));
    }
  }
}

TEST(RandomTest, DistributionsHaveTheRightMoments) {
  Scope s = Scope::NewRootScope();
  const int64_t n = 200000;  // large enough to fill in parallel
  Output u = ops::RandomUniform(s, {n}, DataType::kFloat, {1, 0});
  Output ud = ops::RandomUniform(s, {n}, DataType::kDouble, {2, 0});
  Output g = ops::RandomStandardNormal(s, {n}, DataType::kFloat, {3, 0});
  Output gd = ops::RandomStandardNormal(s, {n}, DataType::kDouble, {4, 0});
  Output t = ops::TruncatedNormal(s, {400, 500}, DataType::kFloat, {5, 0});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(t.shape(), PartialTensorShape({400, 500}));
  auto got = test::RunGraph(s, {}, {u, ud, g, gd, t});
  ASSERT_TRUE(got.ok()) << got.status();
  for (const Moments& m :
       {MomentsOf<float>((*got)[0]), MomentsOf<double>((*got)[1])}) {
    EXPECT_NEAR(m.mean, 0.5, 0.005);
    EXPECT_NEAR(m.var, 1.0 / 12, 0.002);
    EXPECT_GE(m.min, 0.0);
    EXPECT_LT(m.max, 1.0);
  }
  for (const Moments& m :
       {MomentsOf<float>((*got)[2]), MomentsOf<double>((*got)[3])}) {
    EXPECT_NEAR(m.mean, 0.0, 0.01);
    EXPECT_NEAR(m.var, 1.0, 0.02);
    EXPECT_GT(m.max, 3.0);
  }
  const Moments tm = MomentsOf<float>((*got)[4]);
  EXPECT_NEAR(tm.mean, 0.0, 0.01);
  EXPECT_NEAR(std::sqrt(tm.var), 0.8796, 0.01);  // stddev of N(0,1) cut at 2
  EXPECT_GE(tm.min, -2.0);
  EXPECT_LE(tm.max, 2.0);
}

TEST(DropoutTest, KeepsAboutOneMinusRateAndScalesKeptElements) {
  Scope s = Scope::NewRootScope();
  const Tensor x = RandomTensor<float>({100, 1000}, 9);
  Output rate = ops::Placeholder(s, DataType::kFloat, PartialTensorShape({}));
  Output y = ops::Dropout(s, x, rate, /*seed=*/17);
  ASSERT_TRUE(s.ok()) << s.status();
  auto got = RunOne(s, y, {{rate, Tensor::Scalar<float>(0.3f)}});
  ASSERT_TRUE(got.ok()) << got.status();
  int64_t kept = 0;
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    const float v = got->flat<float>()[i];
    if (v != 0) {
      ++kept;
      EXPECT_FLOAT_EQ(v, x.flat<float>()[i] / 0.7f);
    }
  }
  EXPECT_NEAR(static_cast<double>(kept) / x.NumElements(), 0.7, 0.01);
  // Rate 0 at test time: the identity.
  got = RunOne(s, y, {{rate, Tensor::Scalar<float>(0.0f)}});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(TensorsEqual<float>(*got, x));
  got = RunOne(s, y, {{rate, Tensor::Scalar<float>(1.0f)}});
  EXPECT_TRUE(HasError(got.status(), absl::StatusCode::kInvalidArgument,
                       {"dropout rate is 1"}));
}

TEST(DropoutTest, LiteralRateOfDoubleInput) {
  Scope s = Scope::NewRootScope();
  const Tensor x = RandomTensor<double>({1000}, 3);
  Output y = ops::Dropout(s, x, 0.5, 1);
  ASSERT_TRUE(s.ok()) << s.status();
  auto got = RunOne(s, y);
  ASSERT_TRUE(got.ok()) << got.status();
  for (int64_t i = 0; i < 1000; ++i) {
    const double v = got->flat<double>()[i];
    EXPECT_TRUE(v == 0 || v == 2 * x.flat<double>()[i]) << i;
  }
}

TEST(InitializerTest, FansFollowTensorFlow) {
  EXPECT_EQ(ops::ComputeFans({}).fan_in, 1);
  EXPECT_EQ(ops::ComputeFans({7}).fan_out, 7);
  EXPECT_EQ(ops::ComputeFans({784, 256}).fan_in, 784);
  EXPECT_EQ(ops::ComputeFans({784, 256}).fan_out, 256);
  EXPECT_EQ(ops::ComputeFans({5, 5, 32, 64}).fan_in, 5 * 5 * 32);
  EXPECT_EQ(ops::ComputeFans({5, 5, 32, 64}).fan_out, 5 * 5 * 64);
}

TEST(InitializerTest, RangesAndSpreadsMatchTheirDefinitions) {
  Scope s = Scope::NewRootScope();
  const TensorShape dense({400, 600});
  const TensorShape conv({3, 3, 64, 128});
  Output gu = ops::GlorotUniform(s, dense, 1);
  Output gn = ops::GlorotNormal(s, dense, 2);
  Output hu = ops::HeUniform(s, conv, 3);
  Output hn = ops::HeNormal(s, conv, 4, DataType::kDouble);
  Output tn = ops::TruncatedNormalInitializer(s, dense, 0.1, 1.0, 5);
  Output ru = ops::RandomUniformInitializer(s, dense, -3, -1, 6);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(hn.shape(), PartialTensorShape(conv));
  auto got = test::RunGraph(s, {}, {gu, gn, hu, hn, tn, ru});
  ASSERT_TRUE(got.ok()) << got.status();
  const double glorot_limit = std::sqrt(6.0 / 1000);
  Moments m = MomentsOf<float>((*got)[0]);
  EXPECT_GE(m.min, -glorot_limit);
  EXPECT_LT(m.max, glorot_limit);
  EXPECT_NEAR(std::sqrt(m.var), glorot_limit / std::sqrt(3.0), 0.002);
  m = MomentsOf<float>((*got)[1]);
  EXPECT_NEAR(std::sqrt(m.var), std::sqrt(2.0 / 1000), 0.001);
  const double he_limit = std::sqrt(6.0 / (3 * 3 * 64));
  m = MomentsOf<float>((*got)[2]);
  EXPECT_GE(m.min, -he_limit);
  EXPECT_LT(m.max, he_limit);
  m = MomentsOf<double>((*got)[3]);
  EXPECT_NEAR(std::sqrt(m.var), std::sqrt(2.0 / (3 * 3 * 64)), 0.001);
  m = MomentsOf<float>((*got)[4]);
  EXPECT_NEAR(m.mean, 1.0, 0.001);
  EXPECT_GE(m.min, 0.8 - 1e-6);
  EXPECT_LE(m.max, 1.2 + 1e-6);
  m = MomentsOf<float>((*got)[5]);
  EXPECT_NEAR(m.mean, -2.0, 0.01);
  EXPECT_GE(m.min, -3.0);
  EXPECT_LT(m.max, -1.0);
}

TEST(InitializerTest, UsableAsVariableInitialValue) {
  Scope s = Scope::NewRootScope();
  ops::Variable w(s, ops::GlorotUniform(s, {4, 3}, 11));
  ASSERT_TRUE(s.ok()) << s.status();
  auto session = ClientSession::Create(s);
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE(
      (*session)->RunTargets({ops::GlobalVariablesInitializer(s)}).ok());
  auto a = (*session)->Run({w});
  auto b = (*session)->Run({w});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)[0].shape(), TensorShape({4, 3}));
  EXPECT_TRUE((*a)[0].Equals((*b)[0]));  // initialized once, then kept
}

}  // namespace
}  // namespace distflow
