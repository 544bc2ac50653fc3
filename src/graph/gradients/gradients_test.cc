#include "distflow/gradients.h"

#include <cmath>

#include "distflow/ops.h"
#include "distflow/session.h"
#include "gmock/gmock.h"
#include "graph/gradients/grad_registry.h"
#include "graph/op_registry.h"
#include "graph/shape_inference.h"
#include "gtest/gtest.h"
#include "kernels/kernel_registry.h"
#include "kernels/kernel_test_util.h"
#include "testing/gradient_checker.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

Tensor RandomDoubles(const TensorShape& shape, uint32_t seed) {
  return test::MakeTensor<double>(
      shape, test::RandomValues<double>(shape.num_elements(), seed));
}

// A unary op y = f(x) of the same shape, registered by tests.
OpDef UnaryTestOp(const char* name) {
  OpDefBuilder b(name);
  b.Input("x", "T")
      .Output("y", "T")
      .TypeAttr("T", {DataType::kFloat, DataType::kDouble})
      .SetShapeFn(shape_fns::UnchangedShape);
  return std::move(b).Build();
}

class MatMulGradTest : public ::testing::TestWithParam<std::pair<bool, bool>> {
};

TEST_P(MatMulGradTest, MatchesFiniteDifferences) {
  const auto [ta, tb] = GetParam();
  Scope s = Scope::NewRootScope();
  // a is logically [2,3] and b [3,4]; stored transposed when asked.
  const TensorShape a_shape = ta ? TensorShape({3, 2}) : TensorShape({2, 3});
  const TensorShape b_shape = tb ? TensorShape({4, 3}) : TensorShape({3, 4});
  auto a = ops::Placeholder(s, DataType::kDouble);
  auto b = ops::Placeholder(s, DataType::kDouble);
  auto c = ops::MatMul(s, a, b, {ta, tb});
  auto error = test::MaxGradientError(
      s, {a, b}, {RandomDoubles(a_shape, 1), RandomDoubles(b_shape, 2)}, c);
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_LT(*error, 1e-8);
}

INSTANTIATE_TEST_SUITE_P(Transposes, MatMulGradTest,
                         ::testing::Values(std::make_pair(false, false),
                                           std::make_pair(false, true),
                                           std::make_pair(true, false),
                                           std::make_pair(true, true)));

TEST(GradientsTest, ReshapeAndIdentityPassGradientsThrough) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s, DataType::kDouble);
  auto w = ops::Placeholder(s, DataType::kDouble);
  auto y = ops::MatMul(s, ops::Reshape(s, ops::Identity(s, x), {2, 3}), w);
  auto error = test::MaxGradientError(s, {x, w},
                                      {RandomDoubles(TensorShape({6}), 3),
                                       RandomDoubles(TensorShape({3, 2}), 4)},
                                      y);
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_LT(*error, 1e-8);
}

// x reaches y along two paths; their contributions add up.
TEST(GradientsTest, SumsContributionsOfEveryPath) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Const(s, Tensor::Matrix<double>({{1, 2}}));
  auto w1 = ops::Const(s, Tensor::Matrix<double>({{3}, {4}}));
  auto w2 = ops::Const(s, Tensor::Matrix<double>({{5}, {7}}));
  auto y1 = ops::MatMul(s, x, w1);
  auto y2 = ops::MatMul(s, ops::Identity(s, x), w2);
  auto grads = Gradients(s, {y1, y2}, {x});
  ASSERT_TRUE(grads.ok()) << grads.status();
  ASSERT_TRUE((*grads)[0].has_value());
  auto value = test::RunOne(s, (*grads)[0].dense());
  ASSERT_TRUE(value.ok()) << value.status();
  // d(x w1 + x w2)/dx = (w1 + w2)^T
  EXPECT_TRUE(value->Equals(Tensor::Matrix<double>({{8, 11}})))
      << value->DebugString();
}

TEST(GradientsTest, GradYsWeightTheOutputs) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Const(s, Tensor::Matrix<float>({{1, 2}}));
  auto w = ops::Const(s, Tensor::Matrix<float>({{3, 1}, {4, 1}}));
  auto y = ops::MatMul(s, x, w);
  auto gy = ops::Const(s, Tensor::Matrix<float>({{2, 10}}));
  auto grads = Gradients(s, {y}, {w}, {gy});
  ASSERT_TRUE(grads.ok()) << grads.status();
  auto value = test::RunOne(s, (*grads)[0].dense());
  ASSERT_TRUE(value.ok()) << value.status();
  // dw = x^T gy
  EXPECT_TRUE(value->Equals(Tensor::Matrix<float>({{2, 10}, {4, 20}})))
      << value->DebugString();
}

TEST(GradientsTest, UnconnectedXHasNoGradient) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Const(s, Tensor::Matrix<float>({{1}}));
  auto unrelated = ops::Const(s, Tensor::Matrix<float>({{2}}));
  auto y = ops::MatMul(s, x, x);
  auto grads = Gradients(s, {y}, {x, unrelated});
  ASSERT_TRUE(grads.ok()) << grads.status();
  EXPECT_TRUE((*grads)[0].has_value());
  EXPECT_FALSE((*grads)[1].has_value());
}

TEST(GradientsTest, DifferentiatesThroughVariablesReadValue) {
  Scope s = Scope::NewRootScope();
  ops::Variable w(s.WithOpName("w"), Tensor::Matrix<float>({{1}, {2}}));
  auto x = ops::Const(s, Tensor::Matrix<float>({{3, 4}, {5, 6}}));
  auto y = ops::MatMul(s, x, w);
  auto grads = Gradients(s, {y}, {w});
  ASSERT_TRUE(grads.ok()) << grads.status();
  auto session = ClientSession::Create(s);
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE(
      (*session)->RunTargets({ops::GlobalVariablesInitializer(s)}).ok());
  auto out = (*session)->Run({(*grads)[0].dense()});
  ASSERT_TRUE(out.ok()) << out.status();
  // d sum(x w) / dw = column sums of x.
  EXPECT_TRUE((*out)[0].Equals(Tensor::Matrix<float>({{8}, {10}})))
      << (*out)[0].DebugString();
}

TEST(GradientsTest, OpWithoutGradientIsNamedInTheError) {
  OpRegistry* ops = OpRegistry::Global();
  if (!ops->LookUp("TestOpWithoutGradient").ok()) {
    ASSERT_TRUE(ops->Register(UnaryTestOp("TestOpWithoutGradient")).ok());
  }
  Scope s = Scope::NewRootScope();
  auto x = ops::Const(s, Tensor::Matrix<float>({{1}}));
  proto::NodeDef def;
  def.set_name("mystery");
  def.set_op("TestOpWithoutGradient");
  def.add_input(x.name());
  auto node = s.graph()->AddNode(def);
  ASSERT_TRUE(node.ok()) << node.status();
  auto grads = Gradients(s, {Output(*node, 0)}, {x});
  ASSERT_FALSE(grads.ok());
  EXPECT_EQ(grads.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(grads.status().message(), HasSubstr("TestOpWithoutGradient"));
}

TEST(GradientsTest, BadGradYsAreRejected) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Const(s, Tensor::Matrix<float>({{1}}));
  auto y = ops::MatMul(s, x, x);
  auto count = Gradients(s, {y}, {x}, {y, y});
  EXPECT_EQ(count.status().code(), absl::StatusCode::kInvalidArgument);
  auto gy = ops::Const(s, Tensor::Matrix<double>({{1}}));
  auto dtype = Gradients(s, {y}, {x}, {gy});
  EXPECT_EQ(dtype.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dtype.status().message(), HasSubstr("float64"));
}

// The checker must catch a wrong gradient: y = 2x with a gradient of g.
TEST(GradientCheckerTest, DetectsAWrongGradient) {
  if (!OpRegistry::Global()->LookUp("TestDouble").ok()) {
    ASSERT_TRUE(OpRegistry::Global()->Register(UnaryTestOp("TestDouble")).ok());
    class TestDoubleOp : public OpKernel {
     public:
      using OpKernel::OpKernel;
      void Compute(OpKernelContext* ctx) override {
        const Tensor& x = ctx->input(0);
        Tensor* y = ctx->allocate_output(0, x.dtype(), x.shape());
        for (int64_t i = 0; i < x.NumElements(); ++i) {
          y->flat<double>()[i] = 2 * x.flat<double>()[i];
        }
      }
    };
    RegisterCpuKernel<TestDoubleOp>(KernelRegistry::Global(), "TestDouble");
    AddGrad(GradRegistry::Global(), "TestDouble",
            [](const Scope&, const Operation&, const std::vector<Output>& g,
               std::vector<Gradient>* dx) {
              (*dx)[0] = g[0];  // wrong: should be 2 g
              return absl::OkStatus();
            });
  }
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s, DataType::kDouble);
  proto::NodeDef def;
  def.set_name("double");
  def.set_op("TestDouble");
  def.add_input(x.name());
  auto node = s.graph()->AddNode(def);
  ASSERT_TRUE(node.ok()) << node.status();
  auto error = test::MaxGradientError(
      s, {x}, {RandomDoubles(TensorShape({3}), 5)}, Output(*node, 0));
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_NEAR(*error, 1.0, 1e-6);
}

TEST(FillLikeTest, ZerosLikeAndOnesLikeKeepShapeAndType) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Const(s, Tensor::Matrix<int32_t>({{5, 6, 7}}));
  auto zeros = test::RunOne(s, ops::ZerosLike(s, x));
  auto ones = test::RunOne(s, ops::OnesLike(s, x));
  ASSERT_TRUE(zeros.ok() && ones.ok());
  EXPECT_TRUE(zeros->Equals(Tensor::Matrix<int32_t>({{0, 0, 0}})));
  EXPECT_TRUE(ones->Equals(Tensor::Matrix<int32_t>({{1, 1, 1}})));
}

}  // namespace
}  // namespace distflow
