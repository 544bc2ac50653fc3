// Sum, Mean, Max, Min, Prod, ArgMax, ArgMin and BiasAddGrad, run through a
// local session and checked against references that visit every input
// element and accumulate it into its output element.
#include <cmath>
#include <cstdint>
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

using test::HasError;
using test::RandomTensor;
using test::RunOne;

using ReduceFn = Output (*)(const Scope&, const Input&, const Input&,
                            const ops::ReduceOptions&);
const struct {
  const char* name;
  ReduceFn op;
} kReductions[] = {{"Sum", ops::Sum},
                   {"Mean", ops::Mean},
                   {"Max", ops::Max},
                   {"Min", ops::Min},
                   {"Prod", ops::Prod}};

// The reduction `name` of `x` over the dimensions `reduce`, accumulated in
// double in row-major order (kept dimensions keep their order).
template <typename T>
Tensor Reference(const std::string& name, const Tensor& x,
                 const std::vector<bool>& reduce, bool keep_dims) {
  std::vector<int64_t> dims;
  int64_t count = 1;
  for (int d = 0; d < x.dims(); ++d) {
    if (reduce[d]) {
      count *= x.dim_size(d);
      if (keep_dims) dims.push_back(1);
    } else {
      dims.push_back(x.dim_size(d));
    }
  }
  Tensor out(x.dtype(), *TensorShape::FromDims(dims));
  const int64_t n = out.NumElements();
  const double init = name == "Prod"  ? 1
                      : name == "Max" ? -std::numeric_limits<double>::infinity()
                      : name == "Min" ? std::numeric_limits<double>::infinity()
                                      : 0;
  std::vector<double> acc(n, init);
  std::vector<int64_t> index(x.dims());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    int64_t rest = i;
    for (int d = x.dims() - 1; d >= 0; --d) {
      index[d] = rest % x.dim_size(d);
      rest /= x.dim_size(d);
    }
    int64_t o = 0;
    for (int d = 0; d < x.dims(); ++d) {
      if (!reduce[d]) o = o * x.dim_size(d) + index[d];
    }
    const double v = x.flat<T>()[i];
    if (name == "Prod") {
      acc[o] *= v;
    } else if (name == "Max") {
      acc[o] = std::max(acc[o], v);
    } else if (name == "Min") {
      acc[o] = std::min(acc[o], v);
    } else {
      acc[o] += v;
    }
  }
  for (int64_t o = 0; o < n; ++o) {
    double v = acc[o];
    if (name == "Mean") {
      v = !std::is_integral_v<T> ? v / count
          : count == 0           ? 0  // documented: no trap
                                 : std::trunc(v / count);
    }
    // Integers saturate: a double at or past 2^63 does not convert to int64
    // (max() itself rounds up to 2^63 as a double).
    if constexpr (std::is_integral_v<T>) {
      if (v >= static_cast<double>(std::numeric_limits<T>::max())) {
        out.flat<T>()[o] = std::numeric_limits<T>::max();
        continue;
      }
      if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) {
        out.flat<T>()[o] = std::numeric_limits<T>::lowest();
        continue;
      }
    }
    out.flat<T>()[o] = static_cast<T>(v);
  }
  return out;
}

template <typename T>
void CheckReductions(const TensorShape& shape, const std::vector<int>& axes,
                     bool fed_axes = false) {
  SCOPED_TRACE(::testing::Message() << shape.DebugString() << " axes "
                                    << ::testing::PrintToString(axes));
  Tensor x = RandomTensor<T>(shape, 21 + shape.num_elements());
  if constexpr (std::is_integral_v<T>) {
    for (T& v : x.flat<T>()) v = static_cast<T>(v % 3);  // products stay exact
  } else {
    for (T& v : x.flat<T>()) v = v * T(0.5) + T(1);  // products stay finite
  }
  std::vector<bool> reduce(shape.dims(), false);
  for (int a : axes) reduce[a < 0 ? a + shape.dims() : a] = true;
  for (bool keep : {false, true}) {
    for (const auto& r : kReductions) {
      SCOPED_TRACE(std::string(r.name) + (keep ? " keep_dims" : ""));
      Scope s = Scope::NewRootScope();
      Output px = ops::Placeholder(s, x.dtype(), PartialTensorShape(shape));
      Output pa = ops::Placeholder(s, DataType::kInt32);
      const Tensor axes_value = Tensor::Vector<int32_t>(
          std::vector<int32_t>(axes.begin(), axes.end()));
      Output y = r.op(s, px, fed_axes ? Input(pa) : Input(axes_value), {keep});
      ASSERT_TRUE(s.ok()) << s.status();
      const Tensor want = Reference<T>(r.name, x, reduce, keep);
      if (!fed_axes) {
        EXPECT_EQ(y.shape(), PartialTensorShape(want.shape()));
      }
      SessionOptions options;
      options.intra_op_threads = 3;
      ClientSession::FeedDict feeds = {{px, x}};
      if (fed_axes) feeds.push_back({pa, axes_value});
      auto got = RunOne(s, y, feeds, options);
      ASSERT_TRUE(got.ok()) << got.status();
      if constexpr (std::is_integral_v<T>) {
        EXPECT_TRUE(test::TensorsEqual<T>(*got, want));
      } else {
        EXPECT_TRUE(test::TensorsNear<T>(
            *got, want, std::is_same_v<T, float> ? 1e-5 : 1e-12));
      }
    }
  }
}

template <typename T>
class ReductionTest : public ::testing::Test {};
using ReductionTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(ReductionTest, ReductionTypes);

TYPED_TEST(ReductionTest, AxesPatterns) {
  CheckReductions<TypeParam>({5}, {0});
  CheckReductions<TypeParam>({5}, {});
  CheckReductions<TypeParam>({}, {});
  CheckReductions<TypeParam>({3, 4}, {0});
  CheckReductions<TypeParam>({3, 4}, {1});
  CheckReductions<TypeParam>({3, 4}, {-1});
  CheckReductions<TypeParam>({3, 4}, {1, 0});
  CheckReductions<TypeParam>({2, 3, 4}, {1});
  CheckReductions<TypeParam>({2, 3, 4, 5}, {0, 2});
  CheckReductions<TypeParam>({2, 3, 4, 5}, {1, 3});
  CheckReductions<TypeParam>({2, 3, 4, 5}, {0, 1, 3});
  CheckReductions<TypeParam>({2, 1, 4, 1}, {1, 2});
  CheckReductions<TypeParam>({3, 0, 2}, {1});  // empty reduced: identities
  CheckReductions<TypeParam>({3, 0, 2}, {0});  // empty output
  CheckReductions<TypeParam>({2, 3, 4}, {2, 0}, /*fed_axes=*/true);
}

TYPED_TEST(ReductionTest, LargeInputsSplitOverThreads) {
  CheckReductions<TypeParam>({300000}, {0});
  CheckReductions<TypeParam>({600, 500}, {0});
  CheckReductions<TypeParam>({600, 500}, {1});
  CheckReductions<TypeParam>({3, 200, 2000}, {1});
}

TEST(ReductionTest, ScalarAxisAndShapeInference) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DataType::kFloat, {-1, 3, 4});
  EXPECT_EQ(ops::Sum(s, x, 1).shape(), PartialTensorShape({-1, 4}));
  EXPECT_EQ(ops::Sum(s, x, {0, 2}, {true}).shape(),
            PartialTensorShape({1, 3, 1}));
  Output axes = ops::Placeholder(s, DataType::kInt32, {2});
  EXPECT_EQ(ops::Mean(s, x, axes, {true}).shape(),
            PartialTensorShape({-1, -1, -1}));
  ASSERT_TRUE(s.ok()) << s.status();
  auto got = RunOne(
      s, ops::Sum(s, Tensor::Matrix<int32_t>({{1, 2}, {3, 4}}), int64_t{-1}));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(
      test::TensorsEqual<int32_t>(*got, Tensor::Vector<int32_t>({3, 7})));
}

TEST(ReductionTest, BadAxesAreErrorsNamingTheAxis) {
  Scope s = Scope::NewRootScope();
  ops::Sum(s, Tensor(DataType::kFloat, {2, 3}), {0, -2});
  EXPECT_TRUE(HasError(s.status(), absl::StatusCode::kInvalidArgument,
                       {"-2", "more than once"}));
  Scope r = Scope::NewRootScope();
  ops::Max(r, Tensor(DataType::kFloat, {2, 3}), 2);
  EXPECT_TRUE(HasError(r.status(), absl::StatusCode::kInvalidArgument,
                       {"axis 2", "rank 2"}));
  Scope f = Scope::NewRootScope();
  Output axes = ops::Placeholder(f, DataType::kInt32);
  Output y =
      ops::Sum(f.WithOpName("total"), Tensor(DataType::kFloat, {2, 3}), axes);
  EXPECT_TRUE(HasError(
      RunOne(f, y, {{axes, Tensor::Vector<int32_t>({1, 1})}}).status(),
      absl::StatusCode::kInvalidArgument, {"more than once", "total"}));
}

template <bool kMax>
Tensor ArgReference(const Tensor& x, int axis) {
  std::vector<int64_t> dims;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < x.dims(); ++d) {
    if (d == axis) continue;
    dims.push_back(x.dim_size(d));
    (d < axis ? outer : inner) *= x.dim_size(d);
  }
  const int64_t n = x.dim_size(axis);
  Tensor out(DataType::kInt64, *TensorShape::FromDims(dims));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      for (int64_t r = 0; r < n; ++r) {
        const float v = x.flat<float>()[(o * n + r) * inner + i];
        const float b = x.flat<float>()[(o * n + best) * inner + i];
        if (kMax ? v > b : v < b) best = r;
      }
      out.flat<int64_t>()[o * inner + i] = best;
    }
  }
  return out;
}

TEST(ArgReductionTest, MatchesReferenceOnEveryAxis) {
  Tensor x = RandomTensor<float>({4, 5, 6}, 3);
  for (float& v : x.flat<float>()) v = std::round(v * 3);  // ties: first wins
  for (int axis = -3; axis < 3; ++axis) {
    SCOPED_TRACE(axis);
    Scope s = Scope::NewRootScope();
    Output mx = ops::ArgMax(s, x, axis);
    Output mn = ops::ArgMin(s, x, int64_t{axis});
    auto got = test::RunGraph(s, {}, {mx, mn});
    ASSERT_TRUE(got.ok()) << got.status();
    const int a = axis < 0 ? axis + 3 : axis;
    EXPECT_EQ(mx.shape(), PartialTensorShape((*got)[0].shape()));
    EXPECT_TRUE(
        test::TensorsEqual<int64_t>((*got)[0], ArgReference<true>(x, a)));
    EXPECT_TRUE(
        test::TensorsEqual<int64_t>((*got)[1], ArgReference<false>(x, a)));
  }
  Scope e = Scope::NewRootScope();
  Output px = ops::Placeholder(e, DataType::kFloat);
  EXPECT_TRUE(HasError(RunOne(e, ops::ArgMax(e.WithOpName("best"), px, 1),
                              {{px, Tensor(DataType::kFloat, {3, 0})}})
                           .status(),
                       absl::StatusCode::kInvalidArgument, {"size 0", "best"}));
}

TEST(BiasAddGradTest, SumsAllButTheLastDimension) {
  for (const TensorShape& shape :
       {TensorShape({4}), TensorShape({3, 5}), TensorShape({2, 3, 7}),
        TensorShape({0, 4}), TensorShape({400, 300})}) {
    SCOPED_TRACE(shape.DebugString());
    const Tensor g = RandomTensor<double>(shape, 8);
    Scope s = Scope::NewRootScope();
    Output y = ops::BiasAddGrad(s, g);
    auto got = RunOne(s, y);
    ASSERT_TRUE(got.ok()) << got.status();
    std::vector<bool> reduce(shape.dims(), true);
    reduce.back() = false;
    EXPECT_TRUE(test::TensorsNear<double>(
        *got, Reference<double>("Sum", g, reduce, false), 1e-12));
  }
}

}  // namespace
}  // namespace distflow
