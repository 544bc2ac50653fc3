#include "graph/placer.h"

#include "distflow/ops.h"
#include "distflow/scope.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

PlacementOptions Cluster() {
  PlacementOptions options;
  options.jobs = {{"ps", 2}, {"worker", 2}};
  options.default_job = "worker";
  options.default_task = 1;
  return options;
}

TEST(PlacerTest, FillsDefaultsAndKeepsExplicitDevices) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root.WithOpName("a").WithDevice("/job:ps/task:1"), 1.0f);
  auto b = ops::Const(root.WithOpName("b").WithDevice("/job:ps"), 1.0f);
  auto c = ops::Add(root.WithOpName("c"), a, b);
  ops::Identity(root.WithOpName("d").WithDevice("/cpu:0"), c);
  ASSERT_TRUE(root.ok());
  Graph* g = root.graph();
  ASSERT_TRUE(PlaceGraph(Cluster(), g).ok());
  EXPECT_EQ(g->FindNode("a")->assigned_device(),
            "/job:ps/replica:0/task:1/device:CPU:0");
  EXPECT_EQ(g->FindNode("b")->assigned_device(),
            "/job:ps/replica:0/task:0/device:CPU:0");
  EXPECT_EQ(g->FindNode("c")->assigned_device(),
            "/job:worker/replica:0/task:1/device:CPU:0");
  EXPECT_EQ(g->FindNode("d")->assigned_device(),
            "/job:worker/replica:0/task:1/device:CPU:0");
}

TEST(PlacerTest, UpdatesOfAVariableRunOnTheVariablesTask) {
  Scope root = Scope::NewRootScope();
  ops::Variable v(root.WithOpName("v").WithDevice("/job:ps/task:1"),
                  Tensor::Scalar<float>(0));
  // No device requested: colocation puts the update with the variable.
  ops::AssignAdd(root.WithOpName("update"), v, 1.0f);
  ASSERT_TRUE(root.ok());
  ASSERT_TRUE(PlaceGraph(Cluster(), root.graph()).ok());
  for (const auto& node : root.graph()->nodes()) {
    if (node->name() == "update" || node->name().rfind("v", 0) == 0) {
      EXPECT_EQ(node->assigned_device(),
                "/job:ps/replica:0/task:1/device:CPU:0")
          << node->name();
    }
  }
}

TEST(PlacerTest, UnknownTaskNamesTheDeviceAndListsTheJobs) {
  Scope root = Scope::NewRootScope();
  ops::Const(root.WithOpName("a").WithDevice("/job:chief/task:0"), 1.0f);
  absl::Status s = PlaceGraph(Cluster(), root.graph());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'a'"));
  EXPECT_THAT(s.message(), HasSubstr("/job:chief/replica:0/task:0"));
  EXPECT_THAT(s.message(), HasSubstr("ps (2 tasks), worker (2 tasks)"));
}

TEST(PlacerTest, ConflictingColocatedRequestsNameBothNodes) {
  Scope root = Scope::NewRootScope();
  ops::Variable v(root.WithOpName("v").WithDevice("/job:ps/task:0"),
                  Tensor::Scalar<float>(0));
  ops::AssignAdd(root.WithOpName("update"), v, 1.0f);
  // As a GraphDef from elsewhere may say it: the update on another task.
  root.graph()->FindNode("update")->set_requested_device("/job:ps/task:1");
  absl::Status s = PlaceGraph(Cluster(), root.graph());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("colocated"));
  EXPECT_THAT(s.message(), HasSubstr("/job:ps/task:1"));
}

}  // namespace
}  // namespace distflow
