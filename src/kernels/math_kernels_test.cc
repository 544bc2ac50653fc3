// Add, Sub, Mul and MatMul, run through a local session and checked against
// references computed here by explicit index arithmetic.
#include <algorithm>
#include <cmath>
#include <cstdint>
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

using BinaryOpFn = Output (*)(const Scope&, const Input&, const Input&);
struct BinaryOpCase {
  const char* name;
  BinaryOpFn build;
};
const BinaryOpCase kBinaryOps[] = {
    {"Add", ops::Add}, {"Sub", ops::Sub}, {"Mul", ops::Mul}};

// What op `name` computes for one pair of elements (uint8 wraps around, like
// C++ conversion).
template <typename T>
T Apply(const std::string& name, T a, T b) {
  if (name == "Add") return static_cast<T>(a + b);
  if (name == "Sub") return static_cast<T>(a - b);
  return static_cast<T>(a * b);
}

// The numpy broadcast of `x` op `y`, one output element at a time.
template <typename T>
Tensor BroadcastReference(const std::string& op, const Tensor& x,
                          const Tensor& y) {
  return test::BinaryReference<T, T>(
      x, y, [&](T a, T b) { return Apply<T>(op, a, b); });
}

template <typename T>
class ElementwiseTest : public ::testing::Test {
 protected:
  static constexpr DataType kType = DataTypeOf<T>::value;

  // Checks every op on inputs of these shapes: as constants (shapes known when
  // building) and, unless `placeholders_only`, also fed through placeholders of
  // unknown shape.
  void Check(const TensorShape& xs, const TensorShape& ys,
             bool placeholders_only = false) {
    SCOPED_TRACE(xs.DebugString() + " with " + ys.DebugString());
    const Tensor x = RandomTensor<T>(xs, 1 + xs.num_elements());
    const Tensor y = RandomTensor<T>(ys, 7 + ys.num_elements());
    SessionOptions options;
    options.intra_op_threads = 4;  // large inputs split across threads
    for (const BinaryOpCase& op : kBinaryOps) {
      SCOPED_TRACE(op.name);
      const Tensor want = BroadcastReference<T>(op.name, x, y);
      if (!placeholders_only) {
        Scope s = Scope::NewRootScope();
        Output z = op.build(s, x, y);
        ASSERT_TRUE(s.ok()) << s.status();
        EXPECT_EQ(z.shape(), PartialTensorShape(want.shape()));
        auto got = RunOne(s, z);
        ASSERT_TRUE(got.ok()) << got.status();
        EXPECT_TRUE(test::TensorsEqual<T>(*got, want));
      }
      Scope s = Scope::NewRootScope();
      Output px = ops::Placeholder(s, kType), py = ops::Placeholder(s, kType);
      Output z = op.build(s, px, py);
      auto got = RunOne(s, z, {{px, x}, {py, y}}, options);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_TRUE(test::TensorsEqual<T>(*got, want));
    }
  }
};
TYPED_TEST_SUITE(ElementwiseTest, test::NumericTypes);

TYPED_TEST(ElementwiseTest, SameShapes) {
  this->Check({}, {});
  this->Check({5}, {5});
  this->Check({2, 3}, {2, 3});
  this->Check({2, 3, 4}, {2, 3, 4});
  this->Check({0, 3}, {0, 3});
}

TYPED_TEST(ElementwiseTest, ScalarWithTensorBothWays) {
  this->Check({}, {2, 3});
  this->Check({2, 3}, {});
  this->Check({1}, {4});
  this->Check({4}, {1, 1});
  this->Check({}, {0});
}

TYPED_TEST(ElementwiseTest, GeneralBroadcasting) {
  this->Check({2, 1, 3}, {4, 1});
  this->Check({4, 1}, {2, 1, 3});
  this->Check({3}, {2, 3});
  this->Check({2, 3}, {3});
  this->Check({4, 1}, {1, 5});
  this->Check({2, 1, 4, 1}, {3, 1, 5});
  this->Check({3, 1}, {3, 4});
  this->Check({1, 3}, {2, 1});
  this->Check({0, 1}, {1, 3});
  this->Check({2, 1}, {2, 0});
}

TYPED_TEST(ElementwiseTest, LargeInputsTakeTheParallelPath) {
  this->Check({300, 200}, {300, 200}, /*placeholders_only=*/true);
  this->Check({}, {250, 300}, true);
  this->Check({250, 300}, {}, true);
  this->Check({40, 1, 1000}, {30, 1}, true);
  this->Check({1000, 1}, {1, 600}, true);
  this->Check({70000}, {3, 1}, true);
  this->Check({3, 40000}, {40000}, true);
}

TYPED_TEST(ElementwiseTest, NumberLiteralTakesTheTensorsType) {
  Scope s = Scope::NewRootScope();
  const Tensor x = RandomTensor<TypeParam>({2, 3}, 3);
  Output z = ops::Add(s, ops::Const(s, x), 3);
  auto got = RunOne(s, z);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(test::TensorsEqual<TypeParam>(
      *got,
      BroadcastReference<TypeParam>("Add", x, Tensor::Scalar<TypeParam>(3))));
}

TEST(ElementwiseErrorTest, RuntimeShapesThatDoNotBroadcastNameShapesAndNode) {
  for (const BinaryOpCase& op : kBinaryOps) {
    SCOPED_TRACE(op.name);
    Scope s = Scope::NewRootScope();
    Output x = ops::Placeholder(s, DataType::kFloat),
           y = ops::Placeholder(s, DataType::kFloat);
    Output z = op.build(s.WithOpName("combine"), x, y);
    ASSERT_TRUE(s.ok()) << s.status();
    auto got = RunOne(s, z,
                      {{x, Tensor(DataType::kFloat, {2, 3})},
                       {y, Tensor(DataType::kFloat, {4})}});
    EXPECT_TRUE(HasError(got.status(), absl::StatusCode::kInvalidArgument,
                         {"[2,3]", "[4]", "combine"}));
    got = RunOne(s, z,
                 {{x, Tensor(DataType::kFloat, {2, 3})},
                  {y, Tensor(DataType::kFloat, {3, 2})}});
    EXPECT_TRUE(HasError(got.status(), absl::StatusCode::kInvalidArgument,
                         {"[2,3]", "[3,2]", "combine"}));
  }
}

TEST(ElementwiseErrorTest, KnownShapesThatDoNotBroadcastFailWhenBuilding) {
  Scope s = Scope::NewRootScope();
  ops::Add(s, Tensor(DataType::kInt32, {2, 3}), Tensor(DataType::kInt32, {4}));
  EXPECT_TRUE(HasError(s.status(), absl::StatusCode::kInvalidArgument,
                       {"[2,3]", "[4]"}));
}

// ---- MatMul ----

// Element (i, j) of `m` read as a matrix, transposed if `transpose`.
template <typename T>
T At(const Tensor& m, bool transpose, int64_t i, int64_t j) {
  return transpose ? m.flat<T>()[j * m.dim_size(1) + i]
                   : m.flat<T>()[i * m.dim_size(1) + j];
}

template <typename T>
class MatMulTest : public ::testing::Test {
 protected:
  // Multiplies random matrices with [m,k] by [k,n] products (stored transposed
  // as asked) and checks the result against a naive triple loop: exactly for
  // integers, for floats within a relative 1e-5 of the sum of the magnitudes of
  // the terms.
  void Check(int64_t m, int64_t k, int64_t n, bool ta, bool tb,
             bool fed = false) {
    SCOPED_TRACE(testing::Message()
                 << "m=" << m << " k=" << k << " n=" << n << " ta=" << ta
                 << " tb=" << tb << " fed=" << fed);
    const Tensor a =
        RandomTensor<T>(ta ? TensorShape({k, m}) : TensorShape({m, k}), 11 + m);
    const Tensor b =
        RandomTensor<T>(tb ? TensorShape({n, k}) : TensorShape({k, n}), 13 + n);
    Scope s = Scope::NewRootScope();
    Output pa = ops::Placeholder(s, DataTypeOf<T>::value, {-1, -1});
    Output pb = ops::Placeholder(s, DataTypeOf<T>::value, {-1, -1});
    Output y =
        fed ? ops::MatMul(s, pa, pb, {ta, tb}) : ops::MatMul(s, a, b, {ta, tb});
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(y.shape(),
              fed ? PartialTensorShape({-1, -1}) : PartialTensorShape({m, n}));
    SessionOptions options;
    options.intra_op_threads = 4;
    ClientSession::FeedDict feeds;
    if (fed) feeds = {{pa, a}, {pb, b}};
    auto got = RunOne(s, y, feeds, options);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->dtype(), DataTypeOf<T>::value);
    ASSERT_EQ(got->shape(), TensorShape({m, n}));
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double want = 0, scale = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double term =
              static_cast<double>(At<T>(a, ta, i, p)) * At<T>(b, tb, p, j);
          want += term;
          scale += std::abs(term);
        }
        const T g = got->flat<T>()[i * n + j];
        if constexpr (std::is_floating_point_v<T>) {
          ASSERT_LE(std::abs(g - want), 1e-5 * scale)
              << "at (" << i << ", " << j << ")";
        } else {
          ASSERT_EQ(g, static_cast<T>(want)) << "at (" << i << ", " << j << ")";
        }
      }
    }
  }

  void CheckAllTransposes(int64_t m, int64_t k, int64_t n, bool fed = false) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        Check(m, k, n, ta, tb, fed);
      }
    }
  }
};
using MatMulTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(MatMulTest, MatMulTypes);

TYPED_TEST(MatMulTest, SmallMatrices) {
  this->CheckAllTransposes(1, 1, 1);
  this->CheckAllTransposes(2, 3, 4);
  this->CheckAllTransposes(5, 1, 7);
  this->CheckAllTransposes(4, 6, 1);
}

TYPED_TEST(MatMulTest, LargeMatrices) {
  this->CheckAllTransposes(130, 70, 90);
  this->CheckAllTransposes(130, 70, 90, /*fed=*/true);
}

// Products large enough to be split over the threads: by rows when the
// product is tall, by columns when it is wide, with ragged last blocks.
TYPED_TEST(MatMulTest, SplitByRowsOrColumns) {
  this->CheckAllTransposes(257, 64, 33);
  this->CheckAllTransposes(40, 100, 211, /*fed=*/true);
}

TYPED_TEST(MatMulTest, EmptyDimensions) {
  this->CheckAllTransposes(3, 0, 5);  // k = 0: zeros
  this->CheckAllTransposes(0, 4, 5);  // m = 0: empty
  this->CheckAllTransposes(3, 4, 0);
  this->CheckAllTransposes(0, 0, 0);
  this->CheckAllTransposes(3, 0, 5, /*fed=*/true);
}

TEST(MatMulErrorTest, MismatchedRuntimeShapesNameTheShapes) {
  Scope s = Scope::NewRootScope();
  Output a = ops::Placeholder(s, DataType::kFloat),
         b = ops::Placeholder(s, DataType::kFloat);
  Output y = ops::MatMul(s.WithOpName("product"), a, b);
  Output yt = ops::MatMul(s.WithOpName("product_t"), a, b,
                          {/*transpose_a=*/true, false});
  ASSERT_TRUE(s.ok()) << s.status();
  const Tensor a23(DataType::kFloat, {2, 3}), b45(DataType::kFloat, {4, 5});
  EXPECT_TRUE(HasError(RunOne(s, y, {{a, a23}, {b, b45}}).status(),
                       absl::StatusCode::kInvalidArgument,
                       {"[2,3]", "[4,5]", "product"}));
  // Transposed, a [2,3] has inner dimension 2, which a [3,5] b does not match.
  const Tensor b35(DataType::kFloat, {3, 5});
  EXPECT_TRUE(HasError(RunOne(s, yt, {{a, a23}, {b, b35}}).status(),
                       absl::StatusCode::kInvalidArgument,
                       {"[2,3]", "[3,5]", "product_t"}));
  EXPECT_TRUE(HasError(
      RunOne(s, y, {{a, Tensor(DataType::kFloat, {2, 3, 1})}, {b, b35}})
          .status(),
      absl::StatusCode::kInvalidArgument, {"[2,3,1]", "product"}));
}

}  // namespace
}  // namespace distflow
