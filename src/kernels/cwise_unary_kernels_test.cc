// Unary elementwise ops and Cast, run through a local session and checked
// against the C++ standard library one element at a time.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
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

using test::RandomTensor;
using test::RunOne;

using UnaryOpFn = Output (*)(const Scope&, const Input&);

absl::StatusOr<Tensor> RunUnary(UnaryOpFn op, const Tensor& x) {
  Scope s = Scope::NewRootScope();
  Output px = ops::Placeholder(s, x.dtype());
  SessionOptions options;
  options.intra_op_threads = 3;
  return RunOne(s, op(s, px), {{px, x}}, options);
}

template <typename T, typename F>
Tensor Map(const Tensor& x, F f) {
  Tensor out(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i)
    out.flat<T>()[i] = static_cast<T>(f(x.flat<T>()[i]));
  return out;
}

struct FloatCase {
  const char* name;
  UnaryOpFn op;
  std::function<double(double)> ref;
  bool positive;  // domain is x > 0
};
const FloatCase kFloatCases[] = {
    {"Neg", ops::Neg, [](double x) { return -x; }, false},
    {"Exp", ops::Exp, [](double x) { return std::exp(x); }, false},
    {"Log", ops::Log, [](double x) { return std::log(x); }, true},
    {"Sqrt", ops::Sqrt, [](double x) { return std::sqrt(x); }, true},
    {"Rsqrt", ops::Rsqrt, [](double x) { return 1 / std::sqrt(x); }, true},
    {"Square", ops::Square, [](double x) { return x * x; }, false},
    {"Reciprocal", ops::Reciprocal, [](double x) { return 1 / x; }, true},
    {"Abs", ops::Abs, [](double x) { return std::abs(x); }, false},
    {"Sign", ops::Sign, [](double x) { return (x > 0) - (x < 0); }, false},
    {"Floor", ops::Floor, [](double x) { return std::floor(x); }, false},
};

template <typename T>
void CheckFloatOps() {
  // Small, odd-sized (vector tails) and large (split over threads).
  for (const TensorShape& shape :
       {TensorShape({}), TensorShape({0}), TensorShape({7, 3}),
        TensorShape({300, 401})}) {
    SCOPED_TRACE(shape.DebugString());
    Tensor x = RandomTensor<T>(shape, 17);
    for (T& v : x.flat<T>()) v *= 4;  // cover several integers for Floor
    if (x.NumElements() > 2) x.flat<T>()[1] = 0;  // Sign(0), Abs(0)
    for (const FloatCase& c : kFloatCases) {
      SCOPED_TRACE(c.name);
      Tensor xi = x;
      if (c.positive) xi = Map<T>(x, [](T v) { return std::abs(v) + T(0.01); });
      auto got = RunUnary(c.op, xi);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_TRUE(test::TensorsNear<T>(
          *got, Map<T>(xi, c.ref), std::is_same_v<T, float> ? 2e-6 : 1e-13));
    }
  }
}

TEST(CwiseUnaryTest, FloatOpsMatchTheStandardLibrary) {
  CheckFloatOps<float>();
  CheckFloatOps<double>();
}

TEST(CwiseUnaryTest, IntegerOps) {
  const Tensor x = Tensor::Vector<int32_t>({-5, 0, 3, -1, 7});
  auto check = [&](UnaryOpFn op, std::vector<int32_t> want) {
    auto got = RunUnary(op, x);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(
        test::TensorsEqual<int32_t>(*got, Tensor::Vector<int32_t>(want)));
  };
  check(ops::Neg, {5, 0, -3, 1, -7});
  check(ops::Abs, {5, 0, 3, 1, 7});
  check(ops::Sign, {-1, 0, 1, -1, 1});
  check(ops::Square, {25, 0, 9, 1, 49});
  // uint8 wraps like C++ arithmetic on unsigned values.
  const Tensor u = Tensor::Vector<uint8_t>({0, 1, 200});
  auto neg = RunUnary(ops::Neg, u);
  auto sq = RunUnary(ops::Square, u);
  auto sign = RunUnary(ops::Sign, u);
  ASSERT_TRUE(neg.ok() && sq.ok() && sign.ok());
  EXPECT_TRUE(
      test::TensorsEqual<uint8_t>(*neg, Tensor::Vector<uint8_t>({0, 255, 56})));
  EXPECT_TRUE(
      test::TensorsEqual<uint8_t>(*sq, Tensor::Vector<uint8_t>({0, 1, 64})));
  EXPECT_TRUE(
      test::TensorsEqual<uint8_t>(*sign, Tensor::Vector<uint8_t>({0, 1, 1})));
}

TEST(CwiseUnaryTest, FloatOnlyOpsRejectIntegersWhenBuilding) {
  Scope s = Scope::NewRootScope();
  ops::Exp(s, Tensor::Vector<int32_t>({1}));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("Exp"), absl::string_view::npos)
      << s.status();
}

TEST(CastTest, ConvertsBetweenNumericTypesAndBool) {
  const Tensor f =
      Tensor::Vector<float>({-1.7f, -0.2f, 0.f, 0.5f, 2.9f, 255.f});
  Scope s = Scope::NewRootScope();
  Output pf = ops::Placeholder(s, DataType::kFloat);
  auto out = test::RunGraph(
      s, {{pf, f}},
      {ops::Cast(s, pf, DataType::kInt32), ops::Cast(s, pf, DataType::kBool),
       ops::Cast(s, pf, DataType::kDouble), ops::Cast(s, pf, DataType::kInt64),
       ops::Cast(s, ops::Cast(s, pf, DataType::kBool), DataType::kFloat),
       ops::Cast(s, pf, DataType::kFloat)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(test::TensorsEqual<int32_t>(
      (*out)[0], Tensor::Vector<int32_t>({-1, 0, 0, 0, 2, 255})));
  EXPECT_TRUE(test::TensorsEqual<bool>(
      (*out)[1], Tensor::Vector<bool>({true, true, false, true, true, true})));
  ASSERT_EQ((*out)[2].TypeString(), "float64[6]");
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ((*out)[2].flat<double>()[i],
              static_cast<double>(f.flat<float>()[i]));
  }
  EXPECT_TRUE(test::TensorsEqual<int64_t>(
      (*out)[3], Tensor::Vector<int64_t>({-1, 0, 0, 0, 2, 255})));
  EXPECT_TRUE(test::TensorsEqual<float>(
      (*out)[4], Tensor::Vector<float>({1, 1, 0, 1, 1, 1})));
  EXPECT_TRUE(test::TensorsEqual<float>((*out)[5], f));

  Scope t = Scope::NewRootScope();
  const Tensor u = Tensor::Vector<uint8_t>({0, 7, 255});
  auto ints = test::RunGraph(
      t, {},
      {ops::Cast(t, u, DataType::kInt32),
       ops::Cast(t, Tensor::Vector<int32_t>({-1, 300}), DataType::kUInt8)});
  ASSERT_TRUE(ints.ok()) << ints.status();
  EXPECT_TRUE(test::TensorsEqual<int32_t>(
      (*ints)[0], Tensor::Vector<int32_t>({0, 7, 255})));
  // Integers narrow modulo 2^8, like C++ conversions.
  EXPECT_TRUE(test::TensorsEqual<uint8_t>((*ints)[1],
                                          Tensor::Vector<uint8_t>({255, 44})));
}

TEST(CastTest, LargeTensorsConvertEveryElement) {
  const Tensor x = RandomTensor<double>({500, 300}, 5);
  Scope s = Scope::NewRootScope();
  Output px = ops::Placeholder(s, DataType::kDouble);
  SessionOptions options;
  options.intra_op_threads = 3;
  auto got = RunOne(s, ops::Cast(s, px, DataType::kFloat), {{px, x}}, options);
  ASSERT_TRUE(got.ok()) << got.status();
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    ASSERT_EQ(got->flat<float>()[i], static_cast<float>(x.flat<double>()[i]));
  }
}

}  // namespace
}  // namespace distflow
