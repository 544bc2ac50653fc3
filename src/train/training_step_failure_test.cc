// Training steps across real tasks (gRPC servers on 127.0.0.1): failures end
// the step on every task instead of leaving one waiting for another.
#include <chrono>

#include "distflow/distflow.h"
#include "distributed/rpc/test_cluster.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

// The ps partition reads the variable (which fails) and waits for the
// gradients; the worker's partition waits for the variable's value. The
// failure must abort both waits.
TEST(TrainingStepFailureTest, StepOnUninitializedPsVariablesFailsWithoutHanging) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Scope root = Scope::NewRootScope();
  Scope worker = root.WithDevice("/job:worker/task:0");
  ops::Variable w(root.WithDevice("/job:ps/task:0").WithOpName("w"),
                  Tensor::Matrix<float>({{1}, {2}}));
  Output loss =
      ops::Sum(worker, ops::MatMul(worker, Tensor::Matrix<float>({{3, 4}}), w),
               Tensor::Vector<int32_t>({0, 1}));
  train::GradientDescentOptimizer sgd(0.1f);
  auto train_op = sgd.Minimize(worker, loss);
  ASSERT_TRUE(train_op.ok()) << train_op.status();
  SessionOptions options;
  options.target = (*cluster)->server("worker", 0)->target();
  auto session = ClientSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = (*session)->RunTargets({*train_op});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("'w'"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  // Initialized, the same step runs.
  ASSERT_TRUE(
      (*session)->RunTargets({ops::GlobalVariablesInitializer(root)}).ok());
  EXPECT_TRUE((*session)->RunTargets({*train_op}).ok());
}

}  // namespace
}  // namespace distflow
