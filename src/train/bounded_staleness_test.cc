// Bounded staleness on an in-process cluster: a fast worker is held back so
// that it never gets more than max_staleness steps ahead of a slow one.
#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "distflow/distflow.h"
#include "distributed/rpc/test_cluster.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"

namespace distflow {
namespace {

using test::HasError;

struct AsyncWorker {
  AsyncWorker(TestCluster* cluster, int task, int max_staleness)
      : gd(0.5f), bounded(&gd, max_staleness, /*num_workers=*/2, task) {
    Scope s = root.WithDeviceFunction(
        ReplicaDeviceSetter(ClusterSpec::Create(cluster->cluster()).value(),
                            absl::StrCat("/job:worker/task:", task)));
    global_step = train::GetOrCreateGlobalStep(s);
    ops::Variable w(s.WithOpName("w"), Tensor::Vector<float>({0, 0}));
    Output loss = ops::Sum(s, ops::Mul(s, w, Tensor::Vector<float>({1, 2})),
                           Tensor::Vector<int32_t>({0}));
    train_op = bounded.Minimize(s, loss, global_step).value();
    init = ops::GlobalVariablesInitializer(root);
    hook = bounded.MakeSessionRunHook();
    SessionOptions options;
    options.target = cluster->server("worker", task)->target();
    session = ClientSession::Create(root, options).value();
  }

  // This worker's and the other's counts of finished steps.
  std::vector<int64_t> Steps() {
    auto t = session->Run({bounded.worker_steps()}).value()[0];
    return {t.flat<int64_t>()[0], t.flat<int64_t>()[1]};
  }

  Scope root = Scope::NewRootScope();
  train::GradientDescentOptimizer gd;
  train::BoundedStalenessOptimizer bounded;
  ops::Variable global_step;
  Operation train_op, init;
  std::unique_ptr<ClientSession> session;
  std::unique_ptr<train::SessionRunHook> hook;
};

TEST(BoundedStalenessTest, AFastWorkerNeverRunsMoreThanKStepsAhead) {
  constexpr int kMaxStaleness = 2;
  constexpr int kSteps = 12;
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 2}}).value();
  AsyncWorker fast(cluster.get(), 0, kMaxStaleness);
  AsyncWorker slow(cluster.get(), 1, kMaxStaleness);
  ASSERT_TRUE(fast.session->RunTargets({fast.init}).ok());

  std::atomic<int> failures{0};
  absl::Notification fast_ahead;
  std::thread slow_thread([&] {
    // Starts once the fast worker is k steps ahead: its next step must wait.
    fast_ahead.WaitForNotification();
    for (int i = 0; i < kSteps; ++i) {
      absl::SleepFor(absl::Milliseconds(20));
      if (!slow.session->RunTargets({slow.train_op}).ok()) ++failures;
    }
  });
  int64_t widest = 0;
  for (int i = 0; i < kSteps; ++i) {
    ASSERT_TRUE(fast.session->RunTargets({fast.train_op}).ok());
    // Between its steps, the fast worker is at most k steps ahead.
    std::vector<int64_t> steps = fast.Steps();
    EXPECT_EQ(steps[0], i + 1);
    EXPECT_LE(steps[0] - steps[1], kMaxStaleness) << "after step " << i + 1;
    widest = std::max(widest, steps[0] - steps[1]);
    if (i + 1 == kMaxStaleness) fast_ahead.Notify();
  }
  EXPECT_EQ(widest, kMaxStaleness);
  ASSERT_TRUE(fast.hook->End(fast.session.get()).ok());
  slow_thread.join();
  EXPECT_EQ(failures.load(), 0);
  auto global_step = slow.session->Run({slow.global_step});
  ASSERT_TRUE(global_step.ok()) << global_step.status();
  EXPECT_EQ((*global_step)[0].scalar<int64_t>(), 2 * kSteps);
}

// A worker that finished retires, so that the others do not wait for it.
TEST(BoundedStalenessTest, ARetiredWorkerHoldsNobodyBack) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 2}}).value();
  AsyncWorker a(cluster.get(), 0, /*max_staleness=*/0);
  AsyncWorker b(cluster.get(), 1, /*max_staleness=*/0);
  ASSERT_TRUE(a.session->RunTargets({a.init}).ok());
  ASSERT_TRUE(b.hook->End(b.session.get()).ok());  // b retires at once
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(a.session->RunTargets({a.train_op}).ok());
  }
  EXPECT_EQ(a.Steps(), (std::vector<int64_t>{3, 0}));
}

TEST(BoundedStalenessTest, RefusesBadArguments) {
  Scope root = Scope::NewRootScope();
  train::GradientDescentOptimizer gd(0.1f);
  ops::Variable w(root.WithOpName("w"), Tensor::Vector<float>({1}));
  Output loss = ops::Sum(root, w, Tensor::Vector<int32_t>({0}));
  train::BoundedStalenessOptimizer bad(&gd, 1, /*num_workers=*/2,
                                       /*worker_index=*/2);
  EXPECT_TRUE(HasError(bad.Minimize(root, loss).status(),
                       absl::StatusCode::kInvalidArgument,
                       {"worker_index", "got 2"}));
}

}  // namespace
}  // namespace distflow
