#include "distflow/scope.h"

#include <algorithm>
#include <string>
#include <vector>

#include "distflow/ops.h"
#include "gmock/gmock.h"
#include "graph/graph.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

std::vector<std::string> ControlInputNames(const Operation& op) {
  std::vector<std::string> names;
  for (const Node* n : op.node()->control_inputs()) names.push_back(n->name());
  return names;
}

TEST(ScopeTest, SeedExampleInfersShapeAndType) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Variable(s, Tensor::Matrix<int32_t>({{1, 2, 3, 4}}));
  auto w = ops::Variable(s, {{2}, {2}, {2}, {2}});
  auto y = ops::MatMul(s, x, w);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(y.valid());
  EXPECT_EQ(y.op().type(), "MatMul");
  EXPECT_EQ(y.dtype(), DataType::kInt32);
  EXPECT_EQ(y.shape(), PartialTensorShape({1, 1}));
  EXPECT_EQ(x.shape(), PartialTensorShape({1, 4}));
  EXPECT_EQ(w.shape(), PartialTensorShape({4, 1}));
}

TEST(ScopeTest, OpNamesAreUnique) {
  Scope s = Scope::NewRootScope();
  auto a = ops::Placeholder(s, DataType::kFloat);
  auto add1 = ops::Add(s, a, a);
  auto add2 = ops::Add(s, a, a);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(add1.op().name(), "Add");
  EXPECT_EQ(add2.op().name(), "Add_1");
  EXPECT_EQ(add2.name(), "Add_1:0");
}

TEST(ScopeTest, SubScopesAndOpNamesPrefix) {
  Scope s = Scope::NewRootScope();
  auto a = ops::Placeholder(s, DataType::kFloat, {2, 2});
  Scope layer1 = s.NewSubScope("layer1");
  auto m = ops::MatMul(layer1, a, a);
  auto named = ops::MatMul(layer1.WithOpName("product"), a, a);
  auto again = ops::MatMul(s.NewSubScope("layer1"), a, a);
  auto nested = ops::Identity(layer1.NewSubScope("inner").WithOpName("out"), a);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(m.op().name(), "layer1/MatMul");
  EXPECT_EQ(named.op().name(), "layer1/product");
  EXPECT_EQ(again.op().name(), "layer1_1/MatMul");
  EXPECT_EQ(nested.op().name(), "layer1/inner/out");
}

TEST(ScopeTest, WithDeviceNestsAndInnerOverrides) {
  Scope s = Scope::NewRootScope();
  Scope ps = s.WithDevice("/job:ps");
  auto a = ops::Placeholder(ps, DataType::kFloat);
  auto b = ops::Placeholder(ps.WithDevice("/task:1"), DataType::kFloat);
  auto c =
      ops::Placeholder(ps.WithDevice("/task:1").WithDevice("/job:worker/cpu:0"),
                       DataType::kFloat);
  auto d = ops::Placeholder(s, DataType::kFloat);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(a.op().device(), "/job:ps");
  EXPECT_EQ(b.op().device(), "/job:ps/task:1");
  EXPECT_EQ(c.op().device(), "/job:worker/task:1/device:CPU:0");
  EXPECT_EQ(d.op().device(), "");
}

TEST(ScopeTest, DeviceFunctionSeesOpAndItsResultIsApplied) {
  Scope s = Scope::NewRootScope();
  std::string seen_type, seen_device, seen_name;
  Scope placed =
      s.WithDevice("/job:ps").WithDeviceFunction([&](const Operation& op) {
        seen_type = op.type();
        seen_name = op.name();
        seen_device = op.device();
        return std::string("/task:3");
      });
  auto a = ops::Placeholder(s, DataType::kFloat, {2, 2});
  auto m = ops::MatMul(placed.WithOpName("m"), a, a);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(seen_type, "MatMul");
  EXPECT_EQ(seen_name, "m");
  EXPECT_EQ(seen_device, "/job:ps");
  EXPECT_EQ(m.op().device(), "/job:ps/task:3");

  // A device scope inside the function's scope overrides what the function
  // chose.
  auto inner = ops::Identity(placed.WithDevice("/task:5"), a);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(inner.op().device(), "/job:ps/task:5");
}

TEST(ScopeTest, ColocateWithCopiesDeviceAndSetsClass) {
  Scope s = Scope::NewRootScope();
  auto a = ops::Placeholder(s.WithDevice("/job:ps/task:2").WithOpName("a"),
                            DataType::kFloat);
  auto b = ops::Identity(s.WithDevice("/job:worker").ColocateWith(a.op()), a);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(b.op().device(), "/job:ps/task:2");
  const AttrMap& attrs = b.node()->attrs();
  ASSERT_TRUE(attrs.contains("_class"));
  ASSERT_EQ(attrs.at("_class").list().s_size(), 1);
  EXPECT_EQ(attrs.at("_class").list().s(0), "loc:@a");
}

TEST(ScopeTest, ControlDependenciesAddCaretInputs) {
  Scope s = Scope::NewRootScope();
  auto a = ops::Placeholder(s.WithOpName("a"), DataType::kFloat);
  Operation first = ops::NoOp(s.WithOpName("first"));
  Operation second = ops::NoOp(s.WithOpName("second"));
  Scope deps =
      s.WithControlDependencies({first}).WithControlDependencies({second});
  auto id = ops::Identity(deps.WithOpName("id"), a);
  auto free = ops::Identity(deps.WithNoControlDependencies(), a);
  ASSERT_TRUE(s.ok()) << s.status();
  const auto& inputs = id.node()->def().input();
  EXPECT_EQ(std::vector<std::string>(inputs.begin(), inputs.end()),
            (std::vector<std::string>{"a", "^first", "^second"}));
  EXPECT_THAT(ControlInputNames(id.op()),
              UnorderedElementsAre("first", "second"));
  EXPECT_TRUE(free.node()->control_inputs().empty());
}

TEST(ScopeTest, NumberLiteralTakesTheOtherInputsType) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s, DataType::kFloat, {3});
  auto y = ops::Mul(s, x, 2);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(y.dtype(), DataType::kFloat);
  EXPECT_EQ(y.shape(), PartialTensorShape({3}));
  const Node* c = y.node()->input(1).node;
  ASSERT_EQ(c->op(), "Const");
  ASSERT_NE(c->constant_value(), nullptr);
  EXPECT_EQ(c->output_type(0), DataType::kFloat);
  EXPECT_TRUE(c->constant_value()->Equals(Tensor::Scalar<float>(2.0f)));
}

TEST(ScopeTest, VariableCreatesHandleReadInitialValueAndAssign) {
  Scope s = Scope::NewRootScope();
  auto w = ops::Variable(s.WithOpName("w"), Tensor::Matrix<float>({{1, 2}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(w.var_name(), "w");
  EXPECT_EQ(w.handle().op().type(), "VarHandleOp");
  EXPECT_EQ(w.op().name(), "w/read");
  EXPECT_EQ(w.op().type(), "ReadVariableOp");
  EXPECT_EQ(w.initializer().name(), "w/Assign");
  const Graph& g = *s.graph();
  ASSERT_NE(g.FindNode("w/initial_value"), nullptr);
  EXPECT_EQ(g.FindNode("w/initial_value")->op(), "Const");
  ASSERT_NE(g.FindNode("w/Assign"), nullptr);
  EXPECT_EQ(g.FindNode("w/Assign")->op(), "AssignVariableOp");
  EXPECT_EQ(g.FindNode("w/Assign")->input(1).node->name(), "w/initial_value");
  EXPECT_EQ(w.dtype(), DataType::kFloat);
  EXPECT_EQ(w.shape(), PartialTensorShape({1, 2}));
}

TEST(ScopeTest, GlobalVariablesInitializerDependsOnEveryInitializer) {
  Scope s = Scope::NewRootScope();
  auto a = ops::Variable(s.WithOpName("a"), 1.0f);
  auto b = ops::Variable(s.WithOpName("b"), {1, 2, 3});
  auto c = ops::Variable(s.NewSubScope("layer"), ops::Zeros(s, {2, 2}));
  Operation init = ops::GlobalVariablesInitializer(s);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(init.type(), "NoOp");
  EXPECT_THAT(
      ControlInputNames(init),
      UnorderedElementsAre("a/Assign", "b/Assign", "layer/Variable/Assign"));
  EXPECT_EQ(a.initializer().name(), "a/Assign");
  EXPECT_EQ(b.shape(), PartialTensorShape({3}));
  EXPECT_EQ(c.initializer().name(), "layer/Variable/Assign");
}

// ---- Errors while building ----

TEST(ScopeErrorTest, MatMulShapeMismatchNamesOpNodeAndShapes) {
  Scope s = Scope::NewRootScope();
  auto a = ops::Const(s, Tensor::Matrix<float>({{1, 2, 3, 4}}));
  auto b = ops::Const(s, Tensor::Matrix<float>({{1}, {2}, {3}}));
  auto product = ops::MatMul(s.WithOpName("product"), a, b);
  EXPECT_FALSE(product.valid());
  ASSERT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string msg(s.status().message());
  EXPECT_THAT(msg, HasSubstr("MatMul"));
  EXPECT_THAT(msg, HasSubstr("'product'"));
  EXPECT_THAT(msg, HasSubstr("[1,4]"));
  EXPECT_THAT(msg, HasSubstr("[3,1]"));
}

TEST(ScopeErrorTest, FirstErrorIsKeptAndLaterOpsAreInvalid) {
  Scope s = Scope::NewRootScope();
  auto a = ops::Const(s, Tensor::Matrix<float>({{1, 2, 3, 4}}));
  ops::MatMul(s.WithOpName("bad"), a, a);
  const absl::Status first = s.status();
  ASSERT_FALSE(first.ok());
  const int nodes = s.graph()->num_nodes();
  // Any scope of the same root sees the error and creates nothing.
  Scope sub = s.NewSubScope("later");
  auto c = ops::Const(sub, 1.0f);
  auto sum = ops::Add(sub, a, a);
  auto v = ops::Variable(sub, 1.0f);
  EXPECT_FALSE(c.valid());
  EXPECT_FALSE(sum.valid());
  EXPECT_FALSE(v.valid());
  EXPECT_EQ(s.graph()->num_nodes(), nodes);
  s.UpdateStatus(absl::InternalError("second"));
  EXPECT_EQ(sub.status(), first);
  proto::GraphDef def;
  EXPECT_EQ(s.ToGraphDef(&def), first);
}

TEST(ScopeErrorTest, MixedTypesNameBothTypes) {
  Scope s = Scope::NewRootScope();
  auto i = ops::Placeholder(s, DataType::kInt32);
  auto f = ops::Placeholder(s, DataType::kFloat);
  EXPECT_FALSE(ops::Add(s, i, f).valid());
  ASSERT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("Add"));
  EXPECT_THAT(s.status().message(), HasSubstr("int32"));
  EXPECT_THAT(s.status().message(), HasSubstr("float32"));
}

TEST(ScopeErrorTest, ReshapeToWrongSizeNamesShapes) {
  Scope s = Scope::NewRootScope();
  auto c = ops::Const(s, {{1, 2, 3}, {4, 5, 6}});
  EXPECT_FALSE(ops::Reshape(s, c, {4, 2}).valid());
  ASSERT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("Reshape"));
  EXPECT_THAT(s.status().message(), HasSubstr("[2,3]"));
  EXPECT_THAT(s.status().message(), HasSubstr("[4,2]"));
}

TEST(ScopeErrorTest, BroadcastFailureNamesShapes) {
  Scope s = Scope::NewRootScope();
  auto a = ops::Placeholder(s, DataType::kFloat, {2, 3});
  auto b = ops::Placeholder(s, DataType::kFloat, {4});
  EXPECT_FALSE(ops::Add(s, a, b).valid());
  ASSERT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("[2,3]"));
  EXPECT_THAT(s.status().message(), HasSubstr("[4]"));
}

TEST(ScopeErrorTest, MalformedDeviceNamesTheString) {
  Scope s = Scope::NewRootScope();
  auto a = ops::Placeholder(s.WithDevice("/job:ps/bogus:1"), DataType::kFloat);
  EXPECT_FALSE(a.valid());
  ASSERT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("/job:ps/bogus:1"));
}

TEST(ScopeErrorTest, AssignOfWrongShapeIsAnError) {
  Scope s = Scope::NewRootScope();
  auto v = ops::Variable(s, Tensor::Matrix<float>({{1, 2, 3, 4}}));
  ASSERT_TRUE(s.ok()) << s.status();
  auto ok = ops::Assign(s, v, Tensor::Matrix<float>({{5, 6, 7, 8}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(ok.shape(), PartialTensorShape({1, 4}));
  EXPECT_FALSE(
      ops::Assign(s, v, Tensor::Matrix<float>({{1, 2}, {3, 4}})).valid());
  ASSERT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("[2,2]"));
  EXPECT_THAT(s.status().message(), HasSubstr("[1,4]"));
}

}  // namespace
}  // namespace distflow
