// Const, Placeholder, Identity, Shape, Reshape, Fill, Zeros and Ones, run
// through a local session.
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "distflow/ops.h"
#include "distflow/scope.h"
#include "distflow/session.h"
#include "distflow/tensor.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"

namespace distflow {
namespace {

using test::HasError;
using test::MakeTensor;
using test::RandomTensor;
using test::RunOne;
using test::TensorsEqual;

// Sample tensors of every non-resource dtype, with distinct non-zero elements.
template <typename T>
Tensor Sample(const TensorShape& shape) {
  std::vector<T> values;
  for (int64_t i = 0; i < shape.num_elements(); ++i) {
    if constexpr (std::is_same_v<T, std::string>) {
      values.push_back("s" + std::to_string(i) + std::string(i, 'x'));
    } else if constexpr (std::is_same_v<T, bool>) {
      values.push_back(i % 3 != 1);
    } else {
      values.push_back(static_cast<T>(i * 3 + 1));
    }
  }
  return MakeTensor<T>(shape, values);
}

template <typename T>
class AllTypesTest : public ::testing::Test {};
using AllTypes = ::testing::Types<float, double, int32_t, int64_t, uint8_t,
                                  bool, std::string>;
TYPED_TEST_SUITE(AllTypesTest, AllTypes);

TYPED_TEST(AllTypesTest, ConstRoundTrips) {
  for (const TensorShape& shape : {TensorShape(), TensorShape({4}),
                                   TensorShape({2, 3}), TensorShape({0, 2})}) {
    const Tensor value = Sample<TypeParam>(shape);
    Scope s = Scope::NewRootScope();
    Output c = ops::Const(s, value);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(c.dtype(), DataTypeOf<TypeParam>::value);
    auto got = RunOne(s, c);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(TensorsEqual<TypeParam>(*got, value)) << shape.DebugString();
  }
}

TYPED_TEST(AllTypesTest, IdentityPassesValuesThrough) {
  const Tensor value = Sample<TypeParam>({3, 2});
  Scope s = Scope::NewRootScope();
  Output c = ops::Identity(s, ops::Const(s, value));
  Output p = ops::Placeholder(s, DataTypeOf<TypeParam>::value);
  Output fed = ops::Identity(s, p);
  auto got = test::RunGraph(s, {{p, value}}, {c, fed});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(TensorsEqual<TypeParam>((*got)[0], value));
  EXPECT_TRUE(TensorsEqual<TypeParam>((*got)[1], value));
}

TYPED_TEST(AllTypesTest, FillRepeatsTheValue) {
  const TypeParam v = Sample<TypeParam>({3}).template flat<TypeParam>()[2];
  Scope s = Scope::NewRootScope();
  Output filled = ops::Fill(s, {2, 3}, Tensor::Scalar<TypeParam>(v));
  Output dims = ops::Placeholder(s, DataType::kInt64);
  Output fed = ops::Fill(s, dims, Tensor::Scalar<TypeParam>(v));
  auto got = test::RunGraph(s, {{dims, Tensor::Vector<int64_t>({4, 0, 1})}},
                            {filled, fed});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(TensorsEqual<TypeParam>(
      (*got)[0], MakeTensor<TypeParam>({2, 3}, std::vector<TypeParam>(6, v))));
  EXPECT_TRUE(
      TensorsEqual<TypeParam>((*got)[1], MakeTensor<TypeParam>({4, 0, 1}, {})));
}

template <typename T>
class NumericTest : public ::testing::Test {};
TYPED_TEST_SUITE(NumericTest, test::NumericTypes);

TYPED_TEST(NumericTest, ZerosAndOnes) {
  const DataType dtype = DataTypeOf<TypeParam>::value;
  Scope s = Scope::NewRootScope();
  Output zeros = ops::Zeros(s, {2, 1, 3}, dtype);
  Output ones = ops::Ones(s, {4}, dtype);
  Output empty = ops::Ones(s, {0, 5}, dtype);
  Output scalar = ops::Ones(s, {}, dtype);
  ASSERT_TRUE(s.ok()) << s.status();
  auto got = test::RunGraph(s, {}, {zeros, ones, empty, scalar});
  ASSERT_TRUE(got.ok()) << got.status();
  using V = std::vector<TypeParam>;
  EXPECT_TRUE(TensorsEqual<TypeParam>(
      (*got)[0], MakeTensor<TypeParam>({2, 1, 3}, V(6, 0))));
  EXPECT_TRUE(
      TensorsEqual<TypeParam>((*got)[1], MakeTensor<TypeParam>({4}, V(4, 1))));
  EXPECT_TRUE(
      TensorsEqual<TypeParam>((*got)[2], MakeTensor<TypeParam>({0, 5}, V())));
  EXPECT_TRUE(
      TensorsEqual<TypeParam>((*got)[3], MakeTensor<TypeParam>({}, V(1, 1))));
}

TEST(ArrayKernelsTest, ZerosAndOnesOfBool) {
  Scope s = Scope::NewRootScope();
  auto got = test::RunGraph(s, {},
                            {ops::Zeros(s, {2}, DataType::kBool),
                             ops::Ones(s, {3}, DataType::kBool)});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(
      TensorsEqual<bool>((*got)[0], Tensor::Vector<bool>({false, false})));
  EXPECT_TRUE(
      TensorsEqual<bool>((*got)[1], Tensor::Vector<bool>({true, true, true})));
}

TEST(ArrayKernelsTest, ShapeInBothOutputTypes) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DataType::kString);
  Output s32 = ops::Shape(s, x);
  Output s64 = ops::Shape(s, x, DataType::kInt64);
  Output scalar = ops::Shape(s, ops::Const(s, 2.5f), DataType::kInt64);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s32.dtype(), DataType::kInt32);
  EXPECT_EQ(s64.dtype(), DataType::kInt64);
  for (const TensorShape& shape :
       {TensorShape({5, 0, 2}), TensorShape({7}), TensorShape()}) {
    auto got = test::RunGraph(s, {{x, Tensor(DataType::kString, shape)}},
                              {s32, s64, scalar});
    ASSERT_TRUE(got.ok()) << got.status();
    const std::vector<int64_t>& dims = shape.dim_sizes();
    EXPECT_TRUE(TensorsEqual<int32_t>(
        (*got)[0], Tensor::Vector<int32_t>(
                       std::vector<int32_t>(dims.begin(), dims.end()))));
    EXPECT_TRUE(
        TensorsEqual<int64_t>((*got)[1], Tensor::Vector<int64_t>(dims)));
    EXPECT_TRUE(TensorsEqual<int64_t>(
        (*got)[2], Tensor::Vector<int64_t>(std::vector<int64_t>{})));
  }
}

TEST(ArrayKernelsTest, ReshapeKeepsRowMajorOrder) {
  const Tensor x = RandomTensor<float>({2, 3, 4}, 5);
  Scope s = Scope::NewRootScope();
  Output c = ops::Const(s, x);
  Output inferred = ops::Reshape(s, c, {4, -1});
  Output inferred64 = ops::Reshape(s, c, Tensor::Vector<int64_t>({-1, 2, 2}));
  Output flat = ops::Reshape(s, c, {-1});
  Output one = ops::Reshape(s, ops::Const(s, {7}),
                            Tensor::Vector<int32_t>(std::vector<int32_t>{}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(inferred.shape(), PartialTensorShape({4, 6}));
  auto got = test::RunGraph(s, {}, {inferred, inferred64, flat, one});
  ASSERT_TRUE(got.ok()) << got.status();
  const std::vector<float> values(x.flat<float>().begin(),
                                  x.flat<float>().end());
  EXPECT_TRUE(
      TensorsEqual<float>((*got)[0], MakeTensor<float>({4, 6}, values)));
  EXPECT_TRUE(
      TensorsEqual<float>((*got)[1], MakeTensor<float>({6, 2, 2}, values)));
  EXPECT_TRUE(TensorsEqual<float>((*got)[2], MakeTensor<float>({24}, values)));
  EXPECT_TRUE(TensorsEqual<int32_t>((*got)[3], Tensor::Scalar<int32_t>(7)));
}

TEST(ArrayKernelsTest, ReshapeOfEmptyTensors) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DataType::kInt32);
  Output r = ops::Reshape(s, x, {-1, 3});
  auto got = RunOne(s, r, {{x, Tensor(DataType::kInt32, {0, 3})}});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->shape(), TensorShape({0, 3}));
}

TEST(ArrayKernelsTest, ReshapeToAFedShapeOfTheWrongSizeNamesTheShapes) {
  Scope s = Scope::NewRootScope();
  Output shape = ops::Placeholder(s, DataType::kInt32, {-1});
  Output r = ops::Reshape(s.WithOpName("reshape"),
                          Tensor(DataType::kFloat, {2, 3}), shape);
  ASSERT_TRUE(s.ok()) << s.status();
  auto got = RunOne(s, r, {{shape, Tensor::Vector<int32_t>({3, 2})}});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->shape(), TensorShape({3, 2}));
  EXPECT_TRUE(HasError(
      RunOne(s, r, {{shape, Tensor::Vector<int32_t>({4, 4})}}).status(),
      absl::StatusCode::kInvalidArgument, {"[2,3]", "[4,4]", "reshape"}));
  EXPECT_TRUE(HasError(
      RunOne(s, r, {{shape, Tensor::Vector<int32_t>({4, -1})}}).status(),
      absl::StatusCode::kInvalidArgument, {"[2,3]", "4", "reshape"}));
  EXPECT_TRUE(HasError(
      RunOne(s, r, {{shape, Tensor::Vector<int32_t>({-1, -1})}}).status(),
      absl::StatusCode::kInvalidArgument, {"reshape"}));
  EXPECT_TRUE(HasError(
      RunOne(s, r, {{shape, Tensor::Vector<int32_t>({-2, -3})}}).status(),
      absl::StatusCode::kInvalidArgument, {"-2", "reshape"}));
}

TEST(ArrayKernelsTest, UnfedPlaceholderNamesItselfAndWhatItExpects) {
  Scope s = Scope::NewRootScope();
  Output x =
      ops::Placeholder(s.WithOpName("images"), DataType::kFloat, {-1, 784});
  Output y = ops::Identity(s, x);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(HasError(RunOne(s, y).status(),
                       absl::StatusCode::kInvalidArgument,
                       {"images", "float32", "[?,784]"}));
  EXPECT_TRUE(HasError(RunOne(s, x).status(),
                       absl::StatusCode::kInvalidArgument,
                       {"images", "float32", "[?,784]"}));
}

TEST(ArrayKernelsTest, PlaceholderFedTheWrongShapeOrTypeIsRejected) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DataType::kFloat, {-1, 2});
  Output y = ops::Identity(s, x);
  EXPECT_TRUE(
      HasError(RunOne(s, y, {{x, Tensor(DataType::kFloat, {3, 3})}}).status(),
               absl::StatusCode::kInvalidArgument, {"x", "[3,3]", "[?,2]"}));
  EXPECT_TRUE(
      HasError(RunOne(s, y, {{x, Tensor(DataType::kInt32, {3, 2})}}).status(),
               absl::StatusCode::kInvalidArgument, {"x", "int32", "float32"}));
}

}  // namespace
}  // namespace distflow
