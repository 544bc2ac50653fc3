// Optimizer slots (names, placement, initial values, reuse), sparse gradients
// through ApplyGradients, and the errors ApplyGradients reports.
#include <map>
#include <string>
#include <vector>

#include "distflow/ops.h"
#include "distflow/session.h"
#include "distflow/train/global_step.h"
#include "distflow/train/optimizer.h"
#include "distflow/train/optimizers.h"
#include "graph/graph.h"
#include "graph/placer.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"

namespace distflow {
namespace train {
namespace {

using test::HasError;

constexpr char kDevice[] = "/job:localhost/replica:0/task:0/device:CPU:0";

// The value of `v` after running the initializer.
Tensor InitialValue(const Scope& s, const ops::Variable& v) {
  auto session = ClientSession::Create(s);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return Tensor();
  EXPECT_TRUE(
      (*session)->RunTargets({ops::GlobalVariablesInitializer(s)}).ok());
  auto got = (*session)->Run({v});
  EXPECT_TRUE(got.ok()) << got.status();
  return got.ok() ? (*got)[0] : Tensor();
}

TEST(OptimizerSlotsTest, AdamSlotsAreNamedColocatedAndZero) {
  Scope s = Scope::NewRootScope();
  ops::Variable w(s.WithDevice(kDevice).WithOpName("w"),
                  Tensor::Matrix<float>({{1, 2}, {3, 4}}));
  AdamOptimizer opt;
  auto train = opt.ApplyGradients(
      s, {{Gradient(ops::Const(s, {{1.f, 1.f}, {1.f, 1.f}})), w}});
  ASSERT_TRUE(train.ok()) << train.status();
  ops::Variable m = opt.GetSlot(w, "m"), v = opt.GetSlot(w, "v");
  ASSERT_TRUE(m.valid() && v.valid());
  EXPECT_EQ(m.var_name(), "w/Adam");
  EXPECT_EQ(v.var_name(), "w/Adam_1");
  EXPECT_FALSE(opt.GetSlot(w, "accumulator").valid());
  for (const ops::Variable& slot : {m, v}) {
    // On the variable's device, though the optimizer's scope names none.
    EXPECT_EQ(slot.handle().op().device(), kDevice) << slot.var_name();
    EXPECT_EQ(slot.shape(), PartialTensorShape({2, 2}));
    EXPECT_TRUE(test::TensorsEqual<float>(
        InitialValue(s, slot), Tensor(DataType::kFloat, TensorShape({2, 2}))));
  }
  EXPECT_EQ(opt.beta1_power().handle().op().device(), kDevice);
  // Only w is trainable: slots and beta powers are not.
  std::vector<ops::Variable> trainable = ops::TrainableVariables(s);
  ASSERT_EQ(trainable.size(), 1u);
  EXPECT_EQ(trainable[0].handle(), w.handle());
  EXPECT_EQ(ops::GlobalVariables(s).size(), 5u);
}

TEST(OptimizerSlotsTest, AccumulatorsStartAtTheirInitialValues) {
  Scope s = Scope::NewRootScope();
  ops::Variable w(s.WithOpName("w"), {1.0f, 2.0f, 3.0f});
  Gradient g(ops::Const(s, {1.f, 1.f, 1.f}));
  AdagradOptimizer adagrad(0.1, 0.25);
  RMSPropOptimizer rmsprop(0.1);
  FtrlOptimizer ftrl(0.1, -0.5, 0.5);
  MomentumOptimizer momentum(0.1, 0.9);
  for (Optimizer* opt :
       std::vector<Optimizer*>{&adagrad, &rmsprop, &ftrl, &momentum}) {
    ASSERT_TRUE(opt->ApplyGradients(s, {{g, w}}).ok()) << opt->name();
  }
  auto expect = [&](Optimizer& opt, const std::string& slot,
                    const std::string& name, float value) {
    ops::Variable v = opt.GetSlot(w, slot);
    ASSERT_TRUE(v.valid()) << opt.name() << " " << slot;
    EXPECT_EQ(v.var_name(), name);
    EXPECT_TRUE(test::TensorsEqual<float>(
        InitialValue(s, v), Tensor::Vector<float>({value, value, value})))
        << name;
  };
  expect(adagrad, "accumulator", "w/Adagrad", 0.25f);
  expect(rmsprop, "rms", "w/RMSProp", 1.0f);
  expect(rmsprop, "momentum", "w/RMSProp_1", 0.0f);
  expect(ftrl, "accum", "w/Ftrl", 0.5f);
  expect(ftrl, "linear", "w/Ftrl_1", 0.0f);
  expect(momentum, "momentum", "w/Momentum", 0.0f);
}

TEST(OptimizerSlotsTest, SecondApplyReusesSlots) {
  Scope s = Scope::NewRootScope();
  ops::Variable w(s.WithOpName("w"), {1.0f, 2.0f});
  MomentumOptimizer opt(0.1, 0.9);
  Gradient g(ops::Const(s, {1.f, 1.f}));
  ASSERT_TRUE(opt.ApplyGradients(s, {{g, w}}).ok());
  ops::Variable first = opt.GetSlot(w, "momentum");
  ASSERT_TRUE(opt.ApplyGradients(s, {{g, w}}).ok());
  EXPECT_EQ(opt.GetSlot(w, "momentum").handle(), first.handle());
  EXPECT_EQ(ops::GlobalVariables(s).size(), 2u);
}

// A sparse gradient updates only its rows of the variable and of the slots.
TEST(OptimizerSlotsTest, SparseGradientTouchesOnlyItsRows) {
  Scope s = Scope::NewRootScope();
  ops::Variable w(s.WithOpName("emb"),
                  Tensor::Matrix<float>({{1, 1}, {2, 2}, {3, 3}, {4, 4}}));
  IndexedSlices slices{ops::Const(s, Tensor::Vector<int64_t>({2, 0, 2})),
                       ops::Const(s, {{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}}),
                       ops::Const(s, {4, 2})};
  AdamOptimizer opt(0.1);
  auto train = opt.ApplyGradients(s, {{Gradient(slices), w}});
  ASSERT_TRUE(train.ok()) << train.status();
  auto session = test::InitializedSession(s);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->RunTargets({*train}).ok());
  auto got = (*session)->Run(
      {w, opt.GetSlot(w, "m"), opt.GetSlot(w, "v"), opt.beta1_power()});
  ASSERT_TRUE(got.ok()) << got.status();
  auto wv = (*got)[0].flat<float>(), m = (*got)[1].flat<float>();
  // Row 2 gets the sum of its two gradient rows (6, 8): m = 0.1 * g.
  EXPECT_FLOAT_EQ(m[4], 0.6f);
  EXPECT_FLOAT_EQ(m[5], 0.8f);
  EXPECT_FLOAT_EQ(m[0], 0.3f);
  for (int row : {1, 3}) {
    for (int j = 0; j < 2; ++j) {
      EXPECT_EQ(wv[row * 2 + j], row + 1.0f) << "row " << row;
      EXPECT_EQ(m[row * 2 + j], 0.0f) << "row " << row;
      EXPECT_EQ((*got)[2].flat<float>()[row * 2 + j], 0.0f) << "row " << row;
    }
  }
  // The first step moves each touched element by lr against its gradient.
  EXPECT_NEAR(wv[0], 0.9f, 1e-5);
  EXPECT_NEAR(wv[5], 2.9f, 1e-5);
  EXPECT_FLOAT_EQ((*got)[3].scalar<float>(), 0.9f * 0.9f);
}

TEST(OptimizerSlotsTest, NoGradientIsAnErrorNamingTheVariables) {
  Scope s = Scope::NewRootScope();
  ops::Variable w(s.WithOpName("w"), {1.0f});
  ops::Variable b(s.WithOpName("b"), {1.0f});
  GradientDescentOptimizer opt(0.1);
  auto train = opt.ApplyGradients(s, {{Gradient(), w}, {Gradient(), b}});
  EXPECT_TRUE(HasError(train.status(), absl::StatusCode::kInvalidArgument,
                       {"no gradient", "w", "b"}));
}

TEST(OptimizerSlotsTest, SlotsNeedAFullyDefinedShape) {
  Scope s = Scope::NewRootScope();
  ops::Variable w(s.WithOpName("w"), DataType::kFloat,
                  PartialTensorShape({-1, 3}));
  AdamOptimizer opt;
  auto train = opt.ApplyGradients(
      s, {{Gradient(ops::Placeholder(s, DataType::kFloat)), w}});
  EXPECT_TRUE(HasError(train.status(), absl::StatusCode::kInvalidArgument,
                       {"'w'", "[?,3]"}));
}

TEST(OptimizerSlotsTest, GradientOfAnotherTypeIsAnError) {
  Scope s = Scope::NewRootScope();
  ops::Variable w(s.WithOpName("w"), {1.0f});
  GradientDescentOptimizer opt(0.1);
  auto train = opt.ApplyGradients(
      s, {{Gradient(ops::Const(s, Tensor::Vector<double>({1.0}))), w}});
  EXPECT_TRUE(HasError(train.status(), absl::StatusCode::kInvalidArgument,
                       {"'w'", "float64", "float32"}));
}

TEST(OptimizerSlotsTest, InvalidHyperparametersAreErrors) {
  Scope s = Scope::NewRootScope();
  ops::Variable w(s.WithOpName("w"), {1.0f});
  Gradient g(ops::Const(s, {1.0f}));
  AdagradOptimizer adagrad(0.1, 0.0);
  EXPECT_TRUE(HasError(adagrad.ApplyGradients(s, {{g, w}}).status(),
                       absl::StatusCode::kInvalidArgument,
                       {"initial_accumulator_value"}));
  FtrlOptimizer ftrl(0.1, 0.5);
  EXPECT_TRUE(HasError(ftrl.ApplyGradients(s, {{g, w}}).status(),
                       absl::StatusCode::kInvalidArgument,
                       {"learning_rate_power"}));
}

// In between-graph training the ops that end a step (the group of updates,
// the global step's increment, the train op) sit with the global step on a
// ps, so that no control edge crosses to the worker and back every step;
// Adam's power updates stay with the powers.
TEST(OptimizerPlacementTest, StepEndsOnTheGlobalStepsTask) {
  Scope root = Scope::NewRootScope();
  ops::Variable global_step =
      GetOrCreateGlobalStep(root.WithDevice("/job:ps/task:0"));
  ops::Variable w(root.WithOpName("w").WithDevice("/job:ps/task:1"),
                  Tensor::Vector<float>({1.0f, 2.0f}));
  Output g = ops::Placeholder(root.WithOpName("g"), DataType::kFloat, {2});
  AdamOptimizer adam(0.1);
  auto train = adam.ApplyGradients(root, {{Gradient(g), w}}, global_step);
  ASSERT_TRUE(train.ok()) << train.status();
  PlacementOptions placement;
  placement.jobs = {{"ps", 2}, {"worker", 1}};
  placement.default_job = "worker";
  ASSERT_TRUE(PlaceGraph(placement, root.graph()).ok());
  std::map<std::string, std::string> device;
  for (const auto& node : root.graph()->nodes()) {
    device[node->name()] = node->assigned_device();
  }
  const std::string ps0 = "/job:ps/replica:0/task:0/device:CPU:0";
  const std::string ps1 = "/job:ps/replica:0/task:1/device:CPU:0";
  EXPECT_EQ(device[train->node()->name()], ps0);
  EXPECT_EQ(device["Adam/update"], ps0);
  ASSERT_FALSE(device["Adam/beta1_power"].empty());
  EXPECT_EQ(device["Adam/update_beta1_power"], device["Adam/beta1_power"]);
  EXPECT_EQ(device["Adam/update_w/ResourceApplyAdam"], ps1);
}

}  // namespace
}  // namespace train
}  // namespace distflow
