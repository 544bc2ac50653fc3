// Synchronous replicas on an in-process cluster (real gRPC servers on
// 127.0.0.1): each worker is a thread with its own graph and its own session
// to its own task, as in between-graph replication.
//
// The model is linear: loss = sum(w * x), so the gradient of w is exactly the
// fed x whatever w is, and plain gradient descent with rate 1 moves w by
// exactly minus the average of the aggregated x's.
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/barrier.h"
#include "absl/synchronization/notification.h"
#include "distflow/distflow.h"
#include "distributed/rpc/test_cluster.h"
#include "graph/graph.h"
#include "graph/placer.h"
#include "gtest/gtest.h"
#include "kernels/async_run_test_util.h"
#include "kernels/kernel_test_util.h"

namespace distflow {
namespace {

using test::AsyncRun;
using test::HasError;
using test::kStaysBlocked;
using test::kWakesWithin;

// One worker's program.
struct Worker {
  Worker(TestCluster* cluster, int task, int replicas_to_aggregate,
         int total_num_replicas)
      : gd(1.0f), sync(&gd, replicas_to_aggregate, total_num_replicas) {
    Scope s = root.WithDeviceFunction(
        ReplicaDeviceSetter(ClusterSpec::Create(cluster->cluster()).value(),
                            absl::StrCat("/job:worker/task:", task)));
    global_step = train::GetOrCreateGlobalStep(s);
    w = ops::Variable(s.WithOpName("w"), Tensor::Vector<float>({0, 0}));
    x = ops::Placeholder(s.WithOpName("x"), DataType::kFloat);
    Output loss = ops::Sum(s, ops::Mul(s, w, x), Tensor::Vector<int32_t>({0}));
    train_op = sync.Minimize(s, loss, global_step).value();
    init = ops::GlobalVariablesInitializer(root);
    hook = sync.MakeSessionRunHook(/*is_chief=*/task == 0);
    SessionOptions options;
    options.target = cluster->server("worker", task)->target();
    session = ClientSession::Create(root, options).value();
  }

  absl::Status Step(std::vector<float> gradient) {
    return session->Run({{x, Tensor::Vector<float>(gradient)}}, {}, {train_op})
        .status();
  }
  int64_t GlobalStep() {
    return session->Run({global_step}).value()[0].scalar<int64_t>();
  }
  std::vector<float> W() {
    auto t = session->Run({w}).value()[0];
    return {t.flat<float>()[0], t.flat<float>()[1]};
  }

  Scope root = Scope::NewRootScope();
  train::GradientDescentOptimizer gd;
  train::SyncReplicasOptimizer sync;
  ops::Variable global_step, w;
  Output x;
  Operation train_op, init;
  std::unique_ptr<ClientSession> session;
  std::unique_ptr<train::SessionRunHook> hook;
};

// Starts the chief (initializes the variables) and then the others, as a
// monitored session would.
void StartAll(std::vector<std::unique_ptr<Worker>>& workers) {
  ASSERT_TRUE(workers[0]->session->RunTargets({workers[0]->init}).ok());
  for (auto& w : workers) {
    ASSERT_TRUE(w->hook->Begin(w->root).ok());
    ASSERT_TRUE(w->hook->AfterCreateSession(w->session.get()).ok());
  }
}

std::vector<std::unique_ptr<Worker>> MakeWorkers(TestCluster* cluster, int n,
                                                 int to_aggregate) {
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < n; ++i) {
    workers.push_back(std::make_unique<Worker>(cluster, i, to_aggregate, n));
  }
  return workers;
}

// The gradient worker `i` contributes in round `r`: distinct for every pair,
// small integers so that sums and halves are exact in float.
std::vector<float> GradientOf(int i, int r) {
  return {static_cast<float>(i + 1), static_cast<float>(4 * r + i)};
}

TEST(SyncReplicasTest, EachStepAppliesTheAverageOfOneGradientPerReplica) {
  auto cluster = TestCluster::Create({{"ps", 2}, {"worker", 2}}).value();
  auto workers = MakeWorkers(cluster.get(), 2, /*to_aggregate=*/2);
  StartAll(workers);
  constexpr int kRounds = 4;
  // The test lines the workers up between rounds, so that neither takes the
  // other's token and contributes twice to a round.
  absl::Barrier* round_done[kRounds];
  for (auto& b : round_done) b = new absl::Barrier(2);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      for (int r = 0; r < kRounds; ++r) {
        if (!workers[i]->Step(GradientOf(i, r)).ok()) ++failures;
        // Each step returns after its round was aggregated.
        if (workers[i]->GlobalStep() < r + 1) ++failures;
        if (round_done[r]->Block()) delete round_done[r];
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(workers[1]->GlobalStep(), kRounds);
  float want0 = 0, want1 = 0;
  for (int r = 0; r < kRounds; ++r) {
    want0 -= (GradientOf(0, r)[0] + GradientOf(1, r)[0]) / 2;
    want1 -= (GradientOf(0, r)[1] + GradientOf(1, r)[1]) / 2;
  }
  EXPECT_EQ(workers[1]->W(), (std::vector<float>{want0, want1}));
  for (auto& w : workers) EXPECT_TRUE(w->hook->End(w->session.get()).ok());
}

// Three workers, two gradients per step: the steps go on while the third
// sleeps, and its late gradient is dropped as stale. Every fast gradient is
// {1, 1}, so each step moves w by exactly -1 whatever gradients it averaged;
// the sleeper's {1000, 1000} would show.
TEST(SyncReplicasTest, BackupWorkersKeepStepsGoingAndStaleGradientsAreDropped) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 3}}).value();
  auto workers = MakeWorkers(cluster.get(), 3, /*to_aggregate=*/2);
  StartAll(workers);
  constexpr int kRounds = 5;
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> fast;
  for (int i = 0; i < 2; ++i) {
    fast.emplace_back([&, i] {
      while (!stop.load()) {
        absl::Status s = workers[i]->Step({1, 1});
        // The chief's End closes the token queue: training is over.
        if (absl::IsOutOfRange(s) && stop.load()) return;
        if (!s.ok()) {
          ++failures;
          return;
        }
      }
    });
  }
  // Worker 2 has not run a single step yet.
  bool reached = false;
  for (int i = 0; i < 2000 && !reached; ++i) {
    reached = workers[2]->GlobalStep() >= kRounds;
    if (!reached) absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(reached) << "the steps waited for the sleeping worker";

  // It wakes up with its local step still 0: its gradient is stale. Its step
  // returns with one of the spare tokens of the steps it missed.
  EXPECT_TRUE(workers[2]->Step({1000, 1000}).ok());
  stop.store(true);
  EXPECT_TRUE(workers[0]->hook->End(workers[0]->session.get()).ok());
  for (auto& t : fast) t.join();
  EXPECT_EQ(failures.load(), 0);
  const int64_t steps = workers[2]->GlobalStep();
  EXPECT_EQ(workers[2]->W(), (std::vector<float>{-static_cast<float>(steps),
                                                 -static_cast<float>(steps)}));
}

TEST(SyncReplicasTest, ChiefEndReleasesWorkersWaitingForATokenWithAnError) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 2}}).value();
  auto workers = MakeWorkers(cluster.get(), 2, /*to_aggregate=*/2);
  StartAll(workers);
  // Worker 1 contributes and waits for a step that worker 0 never completes.
  AsyncRun step(workers[1]->session.get(),
                {{workers[1]->x, Tensor::Vector<float>({1, 1})}}, {},
                {workers[1]->train_op});
  EXPECT_FALSE(step.FinishesWithin(kStaysBlocked));
  ASSERT_TRUE(workers[0]->hook->End(workers[0]->session.get()).ok());
  ASSERT_TRUE(step.FinishesWithin(kWakesWithin));
  EXPECT_TRUE(HasError(step.Result().status(), absl::StatusCode::kOutOfRange,
                       {"sync_token_q", "closed"}));
}

TEST(SyncReplicasTest, AStepWaitingForATokenFailsWhenThePsDies) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 2}}).value();
  auto workers = MakeWorkers(cluster.get(), 2, /*to_aggregate=*/2);
  StartAll(workers);
  AsyncRun step(workers[1]->session.get(),
                {{workers[1]->x, Tensor::Vector<float>({1, 1})}}, {},
                {workers[1]->train_op});
  EXPECT_FALSE(step.FinishesWithin(kStaysBlocked));
  cluster->Kill("ps", 0);
  ASSERT_TRUE(step.FinishesWithin(kWakesWithin));
  EXPECT_FALSE(step.Result().ok());
  // The chief's aggregation loop failed too, and says so.
  train::SessionRunContext context(nullptr, nullptr, nullptr);
  absl::Status loop = absl::OkStatus();
  for (int i = 0; i < 200 && loop.ok(); ++i) {
    loop = workers[0]->hook->AfterRun(&context, {});
    if (loop.ok()) absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_TRUE(HasError(loop, loop.code(), {"aggregation"}));
  EXPECT_FALSE(loop.ok());
  workers[0]->hook.reset();  // must not hang with the ps gone
}

// A sparse gradient (an embedding lookup) goes through a sparse accumulator
// and the wrapped optimizer's sparse update: only the looked-up rows move. A
// single replica in a local session, driven by the hook as a chief.
TEST(SyncReplicasTest, SparseGradientsUpdateOnlyTheirRows) {
  Scope root = Scope::NewRootScope();
  train::GradientDescentOptimizer gd(1.0f);
  train::SyncReplicasOptimizer sync(&gd, /*replicas_to_aggregate=*/1);
  ops::Variable global_step = train::GetOrCreateGlobalStep(root);
  ops::Variable emb(root.WithOpName("emb"),
                    Tensor::Matrix<float>({{1, 1}, {2, 2}, {3, 3}}));
  Output rows = ops::Gather(root, emb, Tensor::Vector<int32_t>({0, 2, 2}));
  Output loss = ops::Sum(root, rows, Tensor::Vector<int32_t>({0, 1}));
  auto train_op = sync.Minimize(root, loss, global_step);
  ASSERT_TRUE(train_op.ok()) << train_op.status();
  Operation init = ops::GlobalVariablesInitializer(root);
  auto hook = sync.MakeSessionRunHook(/*is_chief=*/true);
  auto session = ClientSession::Create(root).value();
  ASSERT_TRUE(session->RunTargets({init}).ok());
  ASSERT_TRUE(hook->Begin(root).ok());
  ASSERT_TRUE(hook->AfterCreateSession(session.get()).ok());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(session->RunTargets({*train_op}).ok());
  }
  ASSERT_TRUE(hook->End(session.get()).ok());
  auto out = session->Run({emb, global_step});
  ASSERT_TRUE(out.ok()) << out.status();
  // Row 0 appears once per step, row 2 twice; two steps of rate 1.
  EXPECT_TRUE(test::TensorsEqual<float>(
      (*out)[0], Tensor::Matrix<float>({{-1, -1}, {2, 2}, {-1, -1}})));
  EXPECT_EQ((*out)[1].scalar<int64_t>(), 2);
}

// The local steps live beside the global step, on a ps, where every
// worker's graph names its variable alike: each worker still has its own.
TEST(SyncReplicasTest, EachWorkerHasItsOwnLocalStep) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 2}}).value();
  auto workers = MakeWorkers(cluster.get(), 2, /*to_aggregate=*/2);
  StartAll(workers);
  auto local_step = [](Worker& w) {
    auto out = w.session->Run({w.sync.local_step()});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? (*out)[0].scalar<int64_t>() : int64_t{-1};
  };
  Operation set_seven = ops::Assign(workers[0]->root.WithOpName("set_seven"),
                                    workers[0]->sync.local_step(), int64_t{7})
                            .op();
  ASSERT_TRUE(workers[0]->session->RunTargets({set_seven}).ok());
  EXPECT_EQ(local_step(*workers[0]), 7);
  EXPECT_EQ(local_step(*workers[1]), 0);
  for (auto& w : workers) EXPECT_TRUE(w->hook->End(w->session.get()).ok());
}

// The chief's aggregation (takes, the wrapped optimizer's update, the step's
// increment, the tokens) runs on the ps tasks alone: nothing it waits for is
// placed on the chief's task, so no control edge crosses to the chief and
// back between the update and the release of the workers.
TEST(SyncReplicasTest, TheAggregationRunsOnThePsTasksAlone) {
  auto cluster = ClusterSpec::FromHostLists("127.0.0.1:1,127.0.0.1:2",
                                            "127.0.0.1:3,127.0.0.1:4");
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Scope root = Scope::NewRootScope();
  Scope s = root.WithDeviceFunction(
      ReplicaDeviceSetter(*cluster, "/job:worker/task:0"));
  ops::Variable global_step = train::GetOrCreateGlobalStep(s);
  ops::Variable w(s.WithOpName("w"), Tensor::Vector<float>({0, 0}));
  ops::Variable b(s.WithOpName("b"), Tensor::Vector<float>({0, 0}));
  Output x = ops::Placeholder(s.WithOpName("x"), DataType::kFloat);
  Output loss = ops::Sum(s, ops::Mul(s, ops::Add(s, w, b), x),
                         Tensor::Vector<int32_t>({0}));
  train::AdamOptimizer adam(0.1);
  train::SyncReplicasOptimizer sync(&adam, 2);
  auto train_op = sync.Minimize(s, loss, global_step);
  ASSERT_TRUE(train_op.ok()) << train_op.status();
  PlacementOptions placement;
  placement.jobs = {{"ps", 2}, {"worker", 2}};
  placement.default_job = "worker";
  ASSERT_TRUE(PlaceGraph(placement, root.graph()).ok());

  // Everything the aggregate op waits for, by data or control edges.
  std::set<const Node*> seen;
  std::vector<const Node*> todo = {sync.chief_aggregate_op().node()};
  std::map<std::string, int> on_job;
  while (!todo.empty()) {
    const Node* n = todo.back();
    todo.pop_back();
    if (!seen.insert(n).second) continue;
    const std::string& device = n->assigned_device();
    EXPECT_EQ(device.rfind("/job:ps/", 0), 0u)
        << n->DebugName() << " of the aggregation is placed on " << device;
    ++on_job[device.substr(0, device.find("/replica"))];
    for (const auto& in : n->inputs()) todo.push_back(in.node);
    for (const Node* c : n->control_inputs()) todo.push_back(c);
  }
  EXPECT_GT(on_job["/job:ps"], 10);  // the walk saw the whole update
}

TEST(SyncReplicasTest, ApplyGradientsRefusesBadArguments) {
  Scope root = Scope::NewRootScope();
  train::GradientDescentOptimizer gd(0.1f);
  ops::Variable w(root.WithOpName("w"), Tensor::Vector<float>({1}));
  Output loss = ops::Sum(root, w, Tensor::Vector<int32_t>({0}));
  train::SyncReplicasOptimizer no_replicas(&gd, 0);
  EXPECT_TRUE(HasError(
      no_replicas.Minimize(root, loss, train::GetOrCreateGlobalStep(root))
          .status(),
      absl::StatusCode::kInvalidArgument, {"replicas_to_aggregate (0)"}));
  train::SyncReplicasOptimizer sync(&gd, 2);
  EXPECT_TRUE(HasError(sync.Minimize(root, loss, ops::Variable()).status(),
                       absl::StatusCode::kInvalidArgument,
                       {"global step", "GetOrCreateGlobalStep"}));
  train::SyncReplicasOptimizer fewer(&gd, 3, 2);
  ASSERT_TRUE(
      fewer.Minimize(root, loss, train::GetOrCreateGlobalStep(root)).ok());
  EXPECT_TRUE(HasError(fewer.GetInitTokensOp(0).status(),
                       absl::StatusCode::kInvalidArgument, {"at least 1"}));
  EXPECT_TRUE(fewer.GetInitTokensOp().ok());
}

}  // namespace
}  // namespace distflow
