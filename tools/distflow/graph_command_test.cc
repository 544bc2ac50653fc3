// `distflow graph` on graphs saved with WriteGraphFile, run as the user runs
// it: build/bin/distflow in a child process.
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "distflow/cluster.h"
#include "distflow/graph_file.h"
#include "distflow/ops.h"
#include "distflow/replica_device_setter.h"
#include "distflow/scope.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/distflow/command_test_util.h"

namespace distflow {
namespace {

using ::distflow::testing::CommandResult;
using ::distflow::testing::RunDistflow;
using ::distflow::testing::ScopedTempDir;
using ::testing::HasSubstr;
using ::testing::Not;

// The seeds' between-graph model: variables on the ps tasks by the replica
// device setter, the product on the worker; plus a large constant.
Scope BetweenGraphModel() {
  auto cluster =
      ClusterSpec::FromHostLists("127.0.0.1:1,127.0.0.1:2", "127.0.0.1:3");
  EXPECT_TRUE(cluster.ok());
  Scope root = Scope::NewRootScope();
  Scope s = root.WithDeviceFunction(
      ReplicaDeviceSetter(*cluster, "/job:worker/task:0"));
  ops::Variable x(s.WithOpName("x"), Tensor::Matrix<float>({{1, 2, 3, 4}}));
  ops::Variable w(s.WithOpName("w"),
                  Tensor::Matrix<float>({{2}, {2}, {2}, {2}}));
  auto product = ops::MatMul(s.WithOpName("product"), x, w);
  Tensor big(DataType::kFloat, TensorShape({100, 10}));
  for (int i = 0; i < 1000; ++i) big.flat<float>()[i] = i;
  ops::Const(s.WithOpName("table"), big);
  ops::Identity(s.WithOpName("out"), product);
  return root;
}

TEST(GraphCommandTest, PrintsNodesWithInputsDevicesAndAttributes) {
  for (const std::string name : {"model.pb", "model.pbtxt"}) {
    ScopedTempDir dir;
    const std::string path = dir.path() + "/" + name;
    ASSERT_TRUE(WriteGraphFile(BetweenGraphModel(), path).ok());
    CommandResult run = RunDistflow({"graph", path});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_THAT(run.output, HasSubstr(path));
    // Variables on the ps tasks, round-robin; compute on the worker.
    EXPECT_THAT(run.output, HasSubstr("x = VarHandleOp()  @ /job:ps/task:0"));
    EXPECT_THAT(run.output, HasSubstr("w = VarHandleOp()  @ /job:ps/task:1"));
    EXPECT_THAT(
        run.output,
        HasSubstr("product = MatMul(x/read, w/read)  @ /job:worker/task:0"));
    EXPECT_THAT(run.output, HasSubstr("out = Identity(product)"));
    // Dtypes and shapes spelled out; a small constant printed, a large one
    // summarised.
    EXPECT_THAT(run.output, HasSubstr("dtype: float32"));
    EXPECT_THAT(run.output, HasSubstr("[1,4]"));
    EXPECT_THAT(run.output, HasSubstr("float32[4,1] [[2] [2] [2] [2]]"));
    EXPECT_THAT(run.output,
                HasSubstr("float32[100,10] (1000 values: min 0, max 999, "
                          "mean 499.5)"));
    EXPECT_THAT(run.output, Not(HasSubstr("998")));
  }
}

TEST(GraphCommandTest, DevicesGroupsTheNodesByDevice) {
  ScopedTempDir dir;
  const std::string path = dir.path() + "/model.pb";
  ASSERT_TRUE(WriteGraphFile(BetweenGraphModel(), path).ok());
  CommandResult run = RunDistflow({"graph", "--devices", path});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const size_t ps0 = run.output.find("\n/job:ps/task:0: ");
  const size_t ps1 = run.output.find("\n/job:ps/task:1: ");
  const size_t worker = run.output.find("\n/job:worker/task:0: ");
  ASSERT_NE(ps0, std::string::npos) << run.output;
  ASSERT_NE(ps1, std::string::npos) << run.output;
  ASSERT_NE(worker, std::string::npos) << run.output;
  EXPECT_LT(ps0, ps1);
  EXPECT_LT(ps1, worker);
  // The product is listed under the worker, not under a ps task.
  const size_t product = run.output.find("  product = MatMul(x/read, w/read)");
  EXPECT_GT(product, worker);
}

TEST(GraphCommandTest, AFileThatIsNoGraphIsNamed) {
  ScopedTempDir dir;
  const std::string path = dir.path() + "/notes.txt";
  std::ofstream(path) << "these are not the nodes you are looking for\n";
  CommandResult run = RunDistflow({"graph", path});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.output, HasSubstr(path));
  EXPECT_THAT(run.output, HasSubstr("is not a GraphDef"));
  run = RunDistflow({"graph", path + ".missing"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.output, HasSubstr(path + ".missing"));
}

}  // namespace
}  // namespace distflow
