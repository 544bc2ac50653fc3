#include "distflow/replica_device_setter.h"

#include <string>
#include <vector>

#include "distflow/ops.h"
#include "gmock/gmock.h"
#include "graph/graph.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

ClusterSpec Cluster(int ps, int workers) {
  std::map<std::string, std::vector<std::string>> jobs;
  for (int i = 0; i < ps; ++i)
    jobs["ps"].push_back("ps" + std::to_string(i) + ":1");
  for (int i = 0; i < workers; ++i)
    jobs["worker"].push_back("w" + std::to_string(i) + ":1");
  return *ClusterSpec::Create(jobs);
}

std::string DeviceOf(const Scope& s, const std::string& node) {
  Node* n = s.graph()->FindNode(node);
  EXPECT_NE(n, nullptr) << node;
  return n == nullptr ? "<missing>" : n->requested_device();
}

std::string Ps(int task) { return "/job:ps/task:" + std::to_string(task); }

// Every node that touches the variable (its read, its initializer and initial
// value) sits on the variable's device.
void ExpectHelpersColocated(const Scope& s, const ops::Variable& v) {
  const std::string device = v.handle().op().device();
  for (const char* helper : {"/read", "/Assign", "/initial_value"}) {
    EXPECT_EQ(DeviceOf(s, v.var_name() + helper), device)
        << v.var_name() << helper;
  }
}

TEST(ReplicaDeviceSetterTest, RoundRobinOverPsTasksAndComputeOnWorker) {
  Scope root = Scope::NewRootScope();
  Scope s = root.WithDeviceFunction(
      ReplicaDeviceSetter(Cluster(3, 2), "/job:worker/task:1"));
  std::vector<ops::Variable> vars;
  const std::vector<TensorShape> shapes = {{4, 4}, {4}, {1000}, {4, 1}, {2}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    vars.emplace_back(s.WithOpName("v" + std::to_string(i)),
                      Tensor(DataType::kFloat, shapes[i]));
  }
  auto x = ops::Placeholder(s.WithOpName("x"), DataType::kFloat, {2, 4});
  auto h = ops::MatMul(s.WithOpName("h"), x, vars[0]);
  ops::MatMul(s.WithOpName("y"), h, vars[3]);
  ops::AssignAdd(s.WithOpName("bump"), vars[4], {1.0f, 1.0f});
  ASSERT_TRUE(root.ok()) << root.status();

  for (size_t i = 0; i < vars.size(); ++i) {
    EXPECT_EQ(vars[i].handle().op().device(), Ps(i % 3)) << i;
    ExpectHelpersColocated(s, vars[i]);
  }
  EXPECT_EQ(DeviceOf(s, "bump"), Ps(4 % 3));
  for (const char* compute : {"x", "h", "y"})
    EXPECT_EQ(DeviceOf(s, compute), "/job:worker/task:1") << compute;
}

TEST(ReplicaDeviceSetterTest, StateOpByteSize) {
  Scope s = Scope::NewRootScope();
  ops::Variable f(s, DataType::kFloat, PartialTensorShape({1000}));
  ops::Variable i64(s, DataType::kInt64, PartialTensorShape({300, 2}));
  ops::Variable partial(s, DataType::kFloat, PartialTensorShape({-1, 3}));
  ops::Variable scalar(s, DataType::kDouble, PartialTensorShape({}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(StateOpByteSize(f.handle().op()), 4000);
  EXPECT_EQ(StateOpByteSize(i64.handle().op()), 4800);
  EXPECT_EQ(StateOpByteSize(partial.handle().op()), 12);
  EXPECT_EQ(StateOpByteSize(scalar.handle().op()), 8);
}

TEST(ReplicaDeviceSetterTest, GreedyPutsEachVariableOnTheLightestTask) {
  struct Var {
    DataType dtype;
    PartialTensorShape shape;
    int64_t bytes;
  };
  const std::vector<Var> model = {
      {DataType::kFloat, {1000}, 4000}, {DataType::kFloat, {10}, 40},
      {DataType::kFloat, {10}, 40},     {DataType::kFloat, {100, 10}, 4000},
      {DataType::kInt64, {300}, 2400},  {DataType::kDouble, {5}, 40},
      {DataType::kFloat, {2, 3}, 24}};
  // The placement worked out by hand for 2 ps tasks (loads after each:
  // 4000|0, 4000|40, 4000|80, 4000|4080, 6400|4080, 6400|4120, 6400|4144).
  const std::vector<int> expected = {0, 1, 1, 1, 0, 1, 1};

  Scope root = Scope::NewRootScope();
  Scope s = root.WithDeviceFunction(ReplicaDeviceSetter(
      Cluster(2, 1), "/job:worker/task:0", PsStrategy::kGreedyByBytes));
  std::vector<ops::Variable> vars;
  for (const Var& v : model) vars.emplace_back(s, v.dtype, v.shape);
  ops::Add(s.WithOpName("sum"), vars[1], vars[2]);
  ASSERT_TRUE(root.ok()) << root.status();

  // And the same by simulating the rule.
  std::vector<int64_t> loads(2, 0);
  for (size_t i = 0; i < model.size(); ++i) {
    const int lightest = loads[1] < loads[0] ? 1 : 0;
    loads[lightest] += model[i].bytes;
    EXPECT_EQ(lightest, expected[i]) << i;
    EXPECT_EQ(vars[i].handle().op().device(), Ps(expected[i])) << i;
    EXPECT_EQ(DeviceOf(s, vars[i].var_name() + "/read"), Ps(expected[i]));
  }
  EXPECT_EQ(DeviceOf(s, "sum"), "/job:worker/task:0");
}

TEST(ReplicaDeviceSetterTest, CopiesOfTheScopeShareTheStrategy) {
  Scope root = Scope::NewRootScope();
  Scope s = root.WithDeviceFunction(
      ReplicaDeviceSetter(Cluster(3, 1), "/job:worker/task:0"));
  Scope layer1 = s.NewSubScope("layer1");
  Scope layer2 = s.NewSubScope("layer2");
  ops::Variable a(layer1, 1.0f), b(layer2, 1.0f), c(layer1, 1.0f), d(s, 1.0f);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(a.handle().op().device(), Ps(0));
  EXPECT_EQ(b.handle().op().device(), Ps(1));
  EXPECT_EQ(c.handle().op().device(), Ps(2));
  EXPECT_EQ(d.handle().op().device(), Ps(0));
}

TEST(ReplicaDeviceSetterTest, InnerDeviceScopesOverrideFieldByField) {
  Scope root = Scope::NewRootScope();
  Scope s = root.WithDeviceFunction(
      ReplicaDeviceSetter(Cluster(3, 2), "/job:worker/task:1"));
  ops::Variable pinned(s.WithDevice("/task:2"), 1.0f);
  ops::Variable next(s, 1.0f);
  auto x = ops::Placeholder(s.WithDevice("/device:CPU:0"), DataType::kFloat);
  auto other = ops::Identity(s.WithDevice("/job:worker/task:0"), x);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(pinned.handle().op().device(), Ps(2));
  ExpectHelpersColocated(s, pinned);
  EXPECT_EQ(next.handle().op().device(), Ps(1));
  EXPECT_EQ(x.op().device(), "/job:worker/task:1/device:CPU:0");
  EXPECT_EQ(other.op().device(), "/job:worker/task:0");
}

TEST(ReplicaDeviceSetterTest, EnclosingRequestsWinAndTheSetterFillsTheRest) {
  Scope root = Scope::NewRootScope();
  DeviceFunction setter =
      ReplicaDeviceSetter(Cluster(2, 2), "/job:worker/task:1");
  Scope s = root.WithDeviceFunction(setter);
  // A variable requested on a worker stays there and uses up no turn.
  ops::Variable local(
      root.WithDevice("/job:worker/task:0").WithDeviceFunction(setter), 1.0f);
  ops::Variable first(s, 1.0f);
  // A variable requested on ps task 1 stays there (and takes a turn).
  ops::Variable on_task1(
      root.WithDevice("/job:ps/task:1").WithDeviceFunction(setter), 1.0f);
  ops::Variable third(s, 1.0f);
  // A device type alone is kept and completed.
  Scope cpu = root.WithDevice("/cpu:0").WithDeviceFunction(setter);
  ops::Variable on_cpu(cpu, 1.0f);
  auto compute = ops::Identity(cpu, first);
  ASSERT_TRUE(root.ok()) << root.status();

  EXPECT_EQ(local.handle().op().device(), "/job:worker/task:0");
  ExpectHelpersColocated(s, local);
  EXPECT_EQ(first.handle().op().device(), Ps(0));
  EXPECT_EQ(on_task1.handle().op().device(), Ps(1));
  EXPECT_EQ(third.handle().op().device(), Ps(0));
  EXPECT_EQ(on_cpu.handle().op().device(), "/job:ps/task:1/device:CPU:0");
  EXPECT_EQ(compute.op().device(), "/job:worker/task:1/device:CPU:0");
}

TEST(ReplicaDeviceSetterTest, WithoutMergingAnyRequestIsKept) {
  Scope root = Scope::NewRootScope();
  ReplicaDeviceSetterOptions options;
  options.merge_devices = false;
  DeviceFunction setter =
      ReplicaDeviceSetter(Cluster(2, 2), "/job:worker/task:1", options);
  auto kept = ops::Placeholder(
      root.WithDevice("/cpu:0").WithDeviceFunction(setter), DataType::kFloat);
  auto placed =
      ops::Placeholder(root.WithDeviceFunction(setter), DataType::kFloat);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(kept.op().device(), "/device:CPU:0");
  EXPECT_EQ(placed.op().device(), "/job:worker/task:1");
}

TEST(ReplicaDeviceSetterTest, SeedProgramWithTrailingSlash) {
  // Seed 000: one ps, one worker, worker_device "/job:worker/task:0/cpu:0/".
  auto cluster =
      ClusterSpec::Create({{"ps", {"ip:2223"}}, {"worker", {"ip:2222"}}});
  ASSERT_TRUE(cluster.ok());
  Scope root = Scope::NewRootScope();
  Scope s = root.WithDeviceFunction(
      ReplicaDeviceSetter(*cluster, "/job:worker/task:0/cpu:0/"));
  ops::Variable x(s.WithOpName("x"), {{1, 2, 3, 4}});
  ops::Variable w(s.WithOpName("w"), {{2}, {2}, {2}, {2}});
  auto mat = ops::MatMul(s.WithOpName("mat"), x, w);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(x.handle().op().device(), Ps(0));
  EXPECT_EQ(w.handle().op().device(), Ps(0));
  EXPECT_EQ(DeviceOf(s, "x/read"), Ps(0));
  EXPECT_EQ(mat.op().device(), "/job:worker/task:0/device:CPU:0");
}

TEST(ReplicaDeviceSetterTest, NoPsJobRequestsNothing) {
  Scope root = Scope::NewRootScope();
  Scope s = root.WithDeviceFunction(
      ReplicaDeviceSetter(Cluster(0, 2), "/job:worker/task:1"));
  ops::Variable v(s, 1.0f);
  auto y = ops::Identity(s, v);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(v.handle().op().device(), "");
  EXPECT_EQ(y.op().device(), "");
}

TEST(ReplicaDeviceSetterTest, PsJobAndStateOpTypesAreOptions) {
  auto cluster = ClusterSpec::Create(
      {{"params", {"p0:1", "p1:1"}}, {"ps", {"x:1"}}, {"worker", {"w:1"}}});
  ASSERT_TRUE(cluster.ok());
  ReplicaDeviceSetterOptions options;
  options.ps_device = "/job:params";
  options.ps_ops = {"VarHandleOp", "Placeholder"};
  Scope root = Scope::NewRootScope();
  Scope s = root.WithDeviceFunction(
      ReplicaDeviceSetter(*cluster, "/job:worker/task:0", options));
  ops::Variable v(s, 1.0f);
  auto accumulator = ops::Placeholder(s, DataType::kFloat);
  auto y = ops::Identity(s, v);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(v.handle().op().device(), "/job:params/task:0");
  EXPECT_EQ(accumulator.op().device(), "/job:params/task:1");
  EXPECT_EQ(y.op().device(), "/job:worker/task:0");
}

TEST(ReplicaDeviceSetterTest, CustomStrategy) {
  ReplicaDeviceSetterOptions options;
  std::vector<std::string> asked;
  options.custom_strategy = [&](const Operation& op) {
    asked.push_back(op.name());
    return 1;
  };
  Scope root = Scope::NewRootScope();
  Scope s = root.WithDeviceFunction(
      ReplicaDeviceSetter(Cluster(2, 1), "/job:worker/task:0", options));
  ops::Variable a(s.WithOpName("a"), 1.0f), b(s.WithOpName("b"), 2.0f);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(a.handle().op().device(), Ps(1));
  EXPECT_EQ(b.handle().op().device(), Ps(1));
  EXPECT_EQ(asked, (std::vector<std::string>{"a", "b"}));
}

TEST(ReplicaDeviceSetterTest, ColocationBeatsTheSetter) {
  Scope root = Scope::NewRootScope();
  Scope s = root.WithDeviceFunction(
      ReplicaDeviceSetter(Cluster(2, 1), "/job:worker/task:0"));
  ops::Variable a(s, 1.0f), b(s, 1.0f);
  auto near_b = ops::Identity(
      s.WithDevice("/job:worker").ColocateWith(b.handle().op()), a);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(near_b.op().device(), Ps(1));
  const auto& attrs = near_b.node()->attrs();
  ASSERT_TRUE(attrs.contains("_class"));
  EXPECT_EQ(attrs.at("_class").list().s(0), "loc:@" + b.var_name());
}

TEST(ReplicaDeviceSetterTest, MalformedWorkerDeviceIsReportedByTheScope) {
  Scope root = Scope::NewRootScope();
  Scope s = root.WithDeviceFunction(
      ReplicaDeviceSetter(Cluster(1, 1), "job:worker/task:0"));
  ops::Placeholder(s, DataType::kFloat);
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(root.status().message(), HasSubstr("'job:worker/task:0'"));
}

TEST(ReplicaDeviceSetterTest, MalformedPsDeviceIsReportedByTheScope) {
  ReplicaDeviceSetterOptions options;
  options.ps_device = "/job:ps/task:x";
  Scope root = Scope::NewRootScope();
  Scope s = root.WithDeviceFunction(
      ReplicaDeviceSetter(Cluster(1, 1), "/job:worker/task:0", options));
  ops::Variable v(s, 1.0f);
  ASSERT_FALSE(root.ok());
  EXPECT_THAT(root.status().message(), HasSubstr("'/job:ps/task:x'"));
}

}  // namespace
}  // namespace distflow
