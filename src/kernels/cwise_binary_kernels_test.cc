// Div, Pow, Maximum, Minimum, SquaredDifference, comparisons, logic, Select,
// BiasAdd and BroadcastGradientArgs, run through a local session and checked
// against references computed one element at a time.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "distflow/ops.h"
#include "distflow/scope.h"
#include "distflow/session.h"
#include "distflow/tensor.h"
#include "gtest/gtest.h"
#include "kernels/cwise_test_util.h"
#include "kernels/kernel_test_util.h"

namespace distflow {
namespace {

using test::BinaryReference;
using test::HasError;
using test::RandomTensor;
using test::RunOne;

using BinaryOpFn = Output (*)(const Scope&, const Input&, const Input&);

// Shapes that cover the broadcast paths: equal, scalar either side, rows,
// columns, outer products, interleaved, empty, and large (split over threads).
const std::vector<std::pair<TensorShape, TensorShape>> kShapePairs = {
    {{}, {}},
    {{5}, {5}},
    {{2, 3}, {}},
    {{}, {2, 3}},
    {{2, 3}, {3}},
    {{4, 1}, {1, 5}},
    {{2, 1, 4, 1}, {3, 1, 5}},
    {{3, 1}, {3, 4}},
    {{0, 3}, {3}},
    {{300, 200}, {300, 200}},
    {{300, 200}, {200}},
    {{1000, 1}, {1, 70}},
    {{40000}, {}},
};

// The value of op(x, y) computed by a session, with x and y fed through
// placeholders of unknown shape (so only the kernel sees the shapes).
absl::StatusOr<Tensor> RunBinary(BinaryOpFn op, const Tensor& x,
                                 const Tensor& y, const char* name = "op") {
  Scope s = Scope::NewRootScope();
  Output px = ops::Placeholder(s, x.dtype()),
         py = ops::Placeholder(s, y.dtype());
  Output z = op(s.WithOpName(name), px, py);
  SessionOptions options;
  options.intra_op_threads = 3;
  return RunOne(s, z, {{px, x}, {py, y}}, options);
}

struct FloatCase {
  const char* name;
  BinaryOpFn op;
  std::function<double(double, double)> ref;
  bool positive_x;  // Pow: keep the base positive
};
const FloatCase kFloatCases[] = {
    {"Div", ops::Div, [](double a, double b) { return a / b; }, false},
    {"Pow", ops::Pow, [](double a, double b) { return std::pow(a, b); }, true},
    {"Maximum", ops::Maximum, [](double a, double b) { return std::max(a, b); },
     false},
    {"Minimum", ops::Minimum, [](double a, double b) { return std::min(a, b); },
     false},
    {"SquaredDifference", ops::SquaredDifference,
     [](double a, double b) { return (a - b) * (a - b); }, false},
    {"Add", ops::Add, [](double a, double b) { return a + b; }, false},
};

template <typename T>
void CheckFloatOps() {
  for (const auto& [xs, ys] : kShapePairs) {
    SCOPED_TRACE(xs.DebugString() + " with " + ys.DebugString());
    Tensor x = RandomTensor<T>(xs, 3 + xs.num_elements());
    const Tensor y = RandomTensor<T>(ys, 5 + ys.num_elements());
    for (const FloatCase& c : kFloatCases) {
      SCOPED_TRACE(c.name);
      Tensor xi = x;
      if (c.positive_x) {
        xi = x.Copy();
        for (T& v : xi.flat<T>()) v = std::abs(v) + T(0.5);
      }
      auto got = RunBinary(c.op, xi, y);
      ASSERT_TRUE(got.ok()) << got.status();
      const Tensor want = BinaryReference<T, T>(
          xi, y, [&](T a, T b) { return static_cast<T>(c.ref(a, b)); });
      EXPECT_TRUE(test::TensorsNear<T>(
          *got, want, std::is_same_v<T, float> ? 1e-6 : 1e-14));
    }
  }
}

TEST(CwiseBinaryTest, FloatOpsMatchReferenceUnderBroadcasting) {
  CheckFloatOps<float>();
  CheckFloatOps<double>();
}

TEST(CwiseBinaryTest, MaximumMinimumSquaredDifferenceOnIntegers) {
  const Tensor x = RandomTensor<int32_t>({30, 7}, 1);
  const Tensor y = RandomTensor<int32_t>({7}, 2);
  auto mx = RunBinary(ops::Maximum, x, y);
  ASSERT_TRUE(mx.ok()) << mx.status();
  EXPECT_TRUE(test::TensorsEqual<int32_t>(
      *mx, BinaryReference<int32_t, int32_t>(
               x, y, [](int32_t a, int32_t b) { return std::max(a, b); })));
  auto mn = RunBinary(ops::Minimum, x, y);
  ASSERT_TRUE(mn.ok()) << mn.status();
  EXPECT_TRUE(test::TensorsEqual<int32_t>(
      *mn, BinaryReference<int32_t, int32_t>(
               x, y, [](int32_t a, int32_t b) { return std::min(a, b); })));
  auto sd = RunBinary(ops::SquaredDifference, x, y);
  ASSERT_TRUE(sd.ok()) << sd.status();
  EXPECT_TRUE(test::TensorsEqual<int32_t>(
      *sd, BinaryReference<int32_t, int32_t>(
               x, y, [](int32_t a, int32_t b) { return (a - b) * (a - b); })));
}

TEST(CwiseBinaryTest, IntegerDivisionTruncatesTowardZero) {
  const Tensor x = Tensor::Vector<int32_t>(
      {7, -7, 7, -7, 0, std::numeric_limits<int32_t>::min(), 100});
  const Tensor y = Tensor::Vector<int32_t>({2, 2, -2, -2, 5, -1, 7});
  auto got = RunBinary(ops::Div, x, y);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(test::TensorsEqual<int32_t>(
      *got, Tensor::Vector<int32_t>(
                {3, -3, -3, 3, 0, std::numeric_limits<int32_t>::min(), 14})));
  auto u = RunBinary(ops::Div, Tensor::Vector<uint8_t>({200, 9}),
                     Tensor::Scalar<uint8_t>(4));
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_TRUE(
      test::TensorsEqual<uint8_t>(*u, Tensor::Vector<uint8_t>({50, 2})));
}

TEST(CwiseBinaryTest, IntegerDivisionByZeroIsAnErrorNamingTheNode) {
  auto got = RunBinary(ops::Div, Tensor::Vector<int64_t>({1, 2, 3}),
                       Tensor::Vector<int64_t>({1, 0, 1}), "ratio");
  EXPECT_TRUE(HasError(got.status(), absl::StatusCode::kInvalidArgument,
                       {"division by zero", "ratio"}));
  // Floats divide by zero into infinities.
  auto f = RunBinary(ops::Div, Tensor::Vector<float>({1, -1}),
                     Tensor::Scalar<float>(0));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->flat<float>()[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(f->flat<float>()[1], -std::numeric_limits<float>::infinity());
}

TEST(CwiseBinaryTest, IntegerPower) {
  auto got = RunBinary(ops::Pow, Tensor::Vector<int32_t>({3, -2, 5, 0, 1}),
                       Tensor::Vector<int32_t>({4, 3, 0, 0, 30}));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(test::TensorsEqual<int32_t>(
      *got, Tensor::Vector<int32_t>({81, -8, 1, 1, 1})));
  auto neg = RunBinary(ops::Pow, Tensor::Vector<int32_t>({2}),
                       Tensor::Vector<int32_t>({-1}), "power");
  EXPECT_TRUE(HasError(neg.status(), absl::StatusCode::kInvalidArgument,
                       {"negative power", "power"}));
}

struct PredicateCase {
  const char* name;
  BinaryOpFn op;
  std::function<bool(double, double)> ref;
};
const PredicateCase kComparisons[] = {
    {"Equal", ops::Equal, [](double a, double b) { return a == b; }},
    {"NotEqual", ops::NotEqual, [](double a, double b) { return a != b; }},
    {"Less", ops::Less, [](double a, double b) { return a < b; }},
    {"LessEqual", ops::LessEqual, [](double a, double b) { return a <= b; }},
    {"Greater", ops::Greater, [](double a, double b) { return a > b; }},
    {"GreaterEqual", ops::GreaterEqual,
     [](double a, double b) { return a >= b; }},
};

template <typename T>
void CheckComparisons() {
  for (const auto& [xs, ys] : kShapePairs) {
    SCOPED_TRACE(xs.DebugString() + " with " + ys.DebugString());
    Tensor x = RandomTensor<T>(xs, 3);
    Tensor y = RandomTensor<T>(ys, 4);
    // Small values so that equal pairs occur.
    for (T& v : x.flat<T>()) v = static_cast<T>(static_cast<int>(v * 3) % 3);
    for (T& v : y.flat<T>()) v = static_cast<T>(static_cast<int>(v * 3) % 3);
    for (const PredicateCase& c : kComparisons) {
      SCOPED_TRACE(c.name);
      auto got = RunBinary(c.op, x, y);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_TRUE(test::TensorsEqual<bool>(
          *got, BinaryReference<bool, T>(
                    x, y, [&](T a, T b) { return c.ref(a, b); })));
    }
  }
}

TEST(CwiseBinaryTest, ComparisonsGiveBoolsUnderBroadcasting) {
  CheckComparisons<float>();
  CheckComparisons<int32_t>();
  CheckComparisons<uint8_t>();
}

TEST(CwiseBinaryTest, LogicalOpsAndEqualOnBools) {
  const Tensor x = Tensor::Matrix<bool>({{true}, {false}});
  const Tensor y = Tensor::Vector<bool>({true, false, true});
  auto a = RunBinary(ops::LogicalAnd, x, y);
  auto o = RunBinary(ops::LogicalOr, x, y);
  auto e = RunBinary(ops::Equal, x, y);
  ASSERT_TRUE(a.ok() && o.ok() && e.ok()) << a.status() << o.status();
  EXPECT_TRUE(test::TensorsEqual<bool>(
      *a, Tensor::Matrix<bool>({{true, false, true}, {false, false, false}})));
  EXPECT_TRUE(test::TensorsEqual<bool>(
      *o, Tensor::Matrix<bool>({{true, true, true}, {true, false, true}})));
  EXPECT_TRUE(test::TensorsEqual<bool>(
      *e, Tensor::Matrix<bool>({{true, false, true}, {false, true, false}})));
  Scope s = Scope::NewRootScope();
  auto n = RunOne(s, ops::LogicalNot(s, y));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_TRUE(
      test::TensorsEqual<bool>(*n, Tensor::Vector<bool>({false, true, false})));
}

TEST(CwiseBinaryTest, LogicalOpsRejectNonBoolInputsWhenBuilding) {
  Scope s = Scope::NewRootScope();
  ops::LogicalAnd(s, Tensor::Vector<float>({1}), Tensor::Vector<float>({1}));
  EXPECT_FALSE(s.ok());
}

TEST(CwiseBinaryTest, SelectBroadcastsConditionAndBranches) {
  struct Case {
    TensorShape c, t, e;
  };
  const Case cases[] = {
      {{2, 3}, {2, 3}, {2, 3}}, {{}, {2, 3}, {2, 3}},
      {{2, 1}, {2, 3}, {2, 3}}, {{3}, {2, 3}, {}},
      {{4, 1, 5}, {3, 1}, {5}}, {{300, 200}, {200}, {300, 1}}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.c.DebugString() + k.t.DebugString() + k.e.DebugString());
    Tensor cond(DataType::kBool, k.c);
    const Tensor r = RandomTensor<float>(k.c, 9);
    for (int64_t i = 0; i < cond.NumElements(); ++i)
      cond.flat<bool>()[i] = r.flat<float>()[i] > 0;
    const Tensor t = RandomTensor<float>(k.t, 10);
    const Tensor e = RandomTensor<float>(k.e, 11);
    Scope s = Scope::NewRootScope();
    Output pc = ops::Placeholder(s, DataType::kBool);
    Output z = ops::Select(s, pc, t, e);
    auto got = RunOne(s, z, {{pc, cond}});
    ASSERT_TRUE(got.ok()) << got.status();
    Tensor want(DataType::kFloat, test::BroadcastOf({k.c, k.t, k.e}));
    test::ForEachBroadcastElement(
        {k.c, k.t, k.e}, [&](int64_t i, const std::vector<int64_t>& o) {
          want.flat<float>()[i] = cond.flat<bool>()[o[0]]
                                      ? t.flat<float>()[o[1]]
                                      : e.flat<float>()[o[2]];
        });
    EXPECT_TRUE(test::TensorsEqual<float>(*got, want));
  }
}

TEST(CwiseBinaryTest, BiasAddAddsAlongTheLastDimension) {
  const Tensor v = RandomTensor<float>({2, 3, 4}, 1);
  const Tensor b = RandomTensor<float>({4}, 2);
  Scope s = Scope::NewRootScope();
  Output y = ops::BiasAdd(s, v, b);
  EXPECT_EQ(y.shape(), PartialTensorShape({2, 3, 4}));
  auto got = RunOne(s, y);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(test::TensorsEqual<float>(
      *got, BinaryReference<float, float>(
                v, b, [](float p, float q) { return p + q; })));

  Scope bad = Scope::NewRootScope();
  ops::BiasAdd(bad, v, RandomTensor<float>({3}, 2));
  EXPECT_TRUE(HasError(bad.status(), absl::StatusCode::kInvalidArgument,
                       {"[3]", "[2,3,4]"}));
  Scope fed = Scope::NewRootScope();
  Output pb = ops::Placeholder(fed, DataType::kFloat);
  auto run = RunOne(fed, ops::BiasAdd(fed.WithOpName("bias"), v, pb),
                    {{pb, RandomTensor<float>({3}, 2)}});
  EXPECT_TRUE(HasError(run.status(), absl::StatusCode::kInvalidArgument,
                       {"[3]", "[2,3,4]", "bias"}));
}

TEST(CwiseBinaryTest, BroadcastGradientArgsNamesTheBroadcastAxes) {
  struct Case {
    std::vector<int32_t> s0, s1, r0, r1;
  };
  const Case cases[] = {
      {{2, 3, 4}, {4}, {}, {0, 1}}, {{2, 1, 4}, {3, 1}, {1}, {0, 2}},
      {{}, {2, 3}, {0, 1}, {}},     {{2, 3}, {2, 3}, {}, {}},
      {{1, 3}, {2, 1}, {0}, {1}},   {{5, 1}, {1, 1}, {}, {0}},
  };
  for (const Case& c : cases) {
    Scope s = Scope::NewRootScope();
    auto r = ops::BroadcastGradientArgs(s, Tensor::Vector<int32_t>(c.s0),
                                        Tensor::Vector<int32_t>(c.s1));
    auto got = test::RunGraph(s, {}, {r.r0, r.r1});
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(
        test::TensorsEqual<int32_t>((*got)[0], Tensor::Vector<int32_t>(c.r0)));
    EXPECT_TRUE(
        test::TensorsEqual<int32_t>((*got)[1], Tensor::Vector<int32_t>(c.r1)));
  }
  Scope s = Scope::NewRootScope();
  auto r = ops::BroadcastGradientArgs(s, Tensor::Vector<int64_t>({2, 3}),
                                      Tensor::Vector<int64_t>({4}));
  EXPECT_TRUE(HasError(test::RunGraph(s, {}, {r.r0}).status(),
                       absl::StatusCode::kInvalidArgument, {"[2,3]", "[4]"}));
}

}  // namespace
}  // namespace distflow
