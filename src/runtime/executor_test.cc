#include "runtime/executor.h"

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "distflow/ops.h"
#include "distflow/scope.h"
#include "distflow/session.h"
#include "gmock/gmock.h"
#include "graph/node_builder.h"
#include "graph/op_registry.h"
#include "graph/shape_inference.h"
#include "graph/subgraph.h"
#include "gtest/gtest.h"
#include "kernels/kernel_registry.h"
#include "runtime/call_frame.h"
#include "runtime/device.h"
#include "runtime/rendezvous.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

constexpr char kBarrierOp[] = "TestRendezvousBarrier";
constexpr char kBlockerOp[] = "TestBlockUntilCancelled";
constexpr char kAwaitBlockerOp[] = "TestAwaitBlockerStarted";
constexpr char kRecordOp[] = "TestRecordOrder";
constexpr char kQuickOp[] = "TestQuickButCalledExpensive";
constexpr char kSlowOp[] = "TestSlowAndCalledExpensive";
constexpr char kHoldersOp[] = "TestCountHolders";
constexpr absl::Duration kTimeout = absl::Seconds(10);

// State shared by the test kernels (tests run one at a time; SetUp resets it).
struct TestSync {
  absl::Mutex mu;
  int arrived = 0;           // barrier kernels waiting for their partner
  int64_t generation = 0;    // barrier rounds completed
  int blockers_started = 0;  // blocker kernels started and not yet awaited
  std::vector<std::string> ran;  // the record kernels, in the order they ran
  // The thread each quick or slow kernel last ran on, by node name.
  std::map<std::string, std::thread::id> ran_on;
};
TestSync& Sync() {
  static TestSync* sync = new TestSync();
  return *sync;
}

// Returns once 2 instances have arrived: a step with two of them succeeds only
// if they run at the same time. DEADLINE_EXCEEDED (instead of hanging) after
// kTimeout.
class BarrierKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    TestSync& s = Sync();
    absl::MutexLock lock(&s.mu);
    const int64_t generation = s.generation;
    if (++s.arrived == 2) {
      s.arrived = 0;
      ++s.generation;
    } else {
      auto released = [&s, generation] { return s.generation != generation; };
      if (!s.mu.AwaitWithTimeout(absl::Condition(&released), kTimeout)) {
        --s.arrived;
        ctx->SetStatus(absl::DeadlineExceededError(
            "the partner never arrived: ran sequentially"));
        return;
      }
    }
    ctx->set_output(0, Tensor::Scalar<int32_t>(1));
  }
};

// Blocks until the step is cancelled (CANCELLED) or kTimeout passes
// (DEADLINE_EXCEEDED).
class BlockerKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    absl::Notification cancelled;
    CancellationManager::Token token;
    if (ctx->cancellation()->RegisterCallback([&] { cancelled.Notify(); },
                                              &token)) {
      {
        absl::MutexLock lock(&Sync().mu);
        ++Sync().blockers_started;
      }
      const bool notified = cancelled.WaitForNotificationWithTimeout(kTimeout);
      ctx->cancellation()->DeregisterCallback(token);
      DF_OP_REQUIRES(
          ctx, notified,
          absl::DeadlineExceededError("the step was never cancelled"));
    }
    ctx->SetStatus(absl::CancelledError("unblocked by cancellation"));
  }
};

// Returns once a blocker kernel has started waiting (DEADLINE_EXCEEDED after
// kTimeout).
class AwaitBlockerKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    TestSync& s = Sync();
    absl::MutexLock lock(&s.mu);
    auto started = [&s] { return s.blockers_started > 0; };
    DF_OP_REQUIRES(ctx,
                   s.mu.AwaitWithTimeout(absl::Condition(&started), kTimeout),
                   absl::DeadlineExceededError("no blocker started"));
    --s.blockers_started;
    ctx->set_output(0, Tensor::Scalar<int32_t>(1));
  }
};

// A cheap kernel that notes its node's name when it runs.
class RecordOrderKernel : public OpKernel {
 public:
  explicit RecordOrderKernel(OpKernelConstruction* ctx)
      : OpKernel(ctx), name_(ctx->node().name()) {}
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    {
      absl::MutexLock lock(&Sync().mu);
      Sync().ran.push_back(name_);
    }
    ctx->set_output(0, Tensor::Scalar<int32_t>(1));
  }

 private:
  const std::string name_;
};

// Notes the thread it runs on; says it is expensive (OpKernel's default)
// and takes `kRunMicros` microseconds.
template <int64_t kRunMicros>
class RecordThreadKernel : public OpKernel {
 public:
  explicit RecordThreadKernel(OpKernelConstruction* ctx)
      : OpKernel(ctx), name_(ctx->node().name()) {}
  void Compute(OpKernelContext* ctx) override {
    absl::SleepFor(absl::Microseconds(kRunMicros));
    {
      absl::MutexLock lock(&Sync().mu);
      Sync().ran_on[name_] = std::this_thread::get_id();
    }
    ctx->set_output(0, Tensor::Scalar<int32_t>(1));
  }

 private:
  const std::string name_;
};

// Outputs how many tensors refer to its input's buffer as it runs.
class CountHoldersKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ctx->set_output(0, Tensor::Scalar<int64_t>(static_cast<int64_t>(
                           ctx->input(0).buffer().use_count())));
  }
};

void RegisterTestOps() {
  static const bool registered = [] {
    for (const char* op : {kBarrierOp, kBlockerOp, kAwaitBlockerOp, kRecordOp,
                           kQuickOp, kSlowOp}) {
      OpDefBuilder b(op);
      b.Output("out", DataType::kInt32)
          .Stateful()
          .SetShapeFn(shape_fns::Scalar);
      if (!OpRegistry::Global()->Register(std::move(b).Build()).ok())
        std::abort();
    }
    OpDefBuilder holders(kHoldersOp);
    holders.Input("in", DataType::kFloat)
        .Output("out", DataType::kInt64)
        .SetShapeFn(shape_fns::Scalar);
    if (!OpRegistry::Global()->Register(std::move(holders).Build()).ok())
      std::abort();
    RegisterCpuKernel<CountHoldersKernel>(KernelRegistry::Global(), kHoldersOp);
    RegisterCpuKernel<BarrierKernel>(KernelRegistry::Global(), kBarrierOp);
    RegisterCpuKernel<BlockerKernel>(KernelRegistry::Global(), kBlockerOp);
    RegisterCpuKernel<AwaitBlockerKernel>(KernelRegistry::Global(),
                                          kAwaitBlockerOp);
    RegisterCpuKernel<RecordOrderKernel>(KernelRegistry::Global(), kRecordOp);
    RegisterCpuKernel<RecordThreadKernel<0>>(KernelRegistry::Global(),
                                             kQuickOp);
    RegisterCpuKernel<RecordThreadKernel<2000>>(KernelRegistry::Global(),
                                                kSlowOp);
    return true;
  }();
  (void)registered;
}

Output TestOp(const Scope& scope, const char* op, const std::string& name) {
  return NodeBuilder(scope.WithOpName(name), op, name).Finalize().output(0);
}

std::unique_ptr<ClientSession> NewClient(const Scope& scope,
                                         int inter_op_threads = 2) {
  SessionOptions options;
  options.inter_op_threads = inter_op_threads;
  auto session = ClientSession::Create(scope, options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(*session) : nullptr;
}

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterTestOps();
    absl::MutexLock lock(&Sync().mu);
    Sync().arrived = 0;
    Sync().blockers_started = 0;
    Sync().ran.clear();
    Sync().ran_on.clear();
  }
  Scope root_ = Scope::NewRootScope();
};

TEST_F(ExecutorTest, RunsOnlyWhatFetchesAndTargetsNeed) {
  auto counter = ops::Variable(root_.WithOpName("counter"), int64_t{0});
  auto bump = ops::AssignAdd(root_.WithOpName("bump"), counter, 1);
  auto wanted = ops::Add(root_.WithOpName("wanted"), 2, 3);
  auto after_bump = ops::Identity(
      root_.WithControlDependencies({bump.op()}).WithOpName("after"), wanted);
  auto init = ops::GlobalVariablesInitializer(root_);
  auto session = NewClient(root_);
  ASSERT_TRUE(session);
  ASSERT_TRUE(session->RunTargets({init}).ok());

  auto out = session->Run({wanted});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<int32_t>(), 5);
  auto value = session->Run({counter});
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ((*value)[0].scalar<int64_t>(), 0) << "the unfetched AssignAdd ran";

  // A control dependency is a need: fetching `after` runs the AssignAdd once.
  out = session->Run({after_bump});
  ASSERT_TRUE(out.ok()) << out.status();
  value = session->Run({counter});
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ((*value)[0].scalar<int64_t>(), 1);
}

TEST_F(ExecutorTest, IndependentExpensiveOpsRunInParallel) {
  // Two roots, and two nodes made ready by one predecessor.
  auto sum =
      ops::Add(root_.WithOpName("sum"), TestOp(root_, kBarrierOp, "barrier_a"),
               TestOp(root_, kBarrierOp, "barrier_b"));
  Scope after_start =
      root_.WithControlDependencies({ops::NoOp(root_.WithOpName("start"))});
  auto c = TestOp(after_start, kBarrierOp, "barrier_c");
  auto d = TestOp(after_start, kBarrierOp, "barrier_d");
  auto session = NewClient(root_, /*inter_op_threads=*/2);
  ASSERT_TRUE(session);
  auto out = session->Run({sum});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<int32_t>(), 2);
  out = session->Run({c, d});
  ASSERT_TRUE(out.ok()) << out.status();
}

// One cheap root makes many expensive nodes ready at once: one runs inline, the
// others go to the pool and may finish before the inline one starts. Each step
// must still wait for every node and return every fetch.
TEST_F(ExecutorTest, WideFanOutReturnsEveryFetchEveryStep) {
  auto x = ops::Const(root_.WithOpName("x"), 3);
  std::vector<Output> fetches;
  for (int i = 0; i < 32; ++i) fetches.push_back(ops::Add(root_, x, x));
  auto session = NewClient(root_, /*inter_op_threads=*/4);
  ASSERT_TRUE(session);
  for (int step = 0; step < 300; ++step) {
    auto out = session->Run(fetches);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), fetches.size());
    for (const Tensor& t : *out)
      ASSERT_EQ(t.scalar<int32_t>(), 6) << "step " << step;
  }
}

TEST_F(ExecutorTest, UnfedPlaceholderErrorNamesItAndCancelsTheStep) {
  // The placeholder fails only once the blocker is running: the error must
  // cancel the blocker.
  auto blocker = TestOp(root_, kBlockerOp, "blocker");
  auto await = TestOp(root_, kAwaitBlockerOp, "await_blocker");
  auto x = ops::Placeholder(
      root_.WithControlDependencies({await.op()}).WithOpName("lonely_input"),
      DataType::kFloat, {2});
  auto y = ops::Mul(root_.WithOpName("y"), x, 2.0f);
  auto session = NewClient(root_);
  ASSERT_TRUE(session);
  const absl::Time begin = absl::Now();
  auto out = session->Run({y, blocker});
  EXPECT_LT(absl::Now() - begin, absl::Seconds(5))
      << "the error did not cancel the step";
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
      << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("lonely_input"));

  // The session is still usable.
  auto fed = session->Run({{x, Tensor::Vector<float>({1, 2})}}, {y});
  ASSERT_TRUE(fed.ok()) << fed.status();
  EXPECT_TRUE((*fed)[0].Equals(Tensor::Vector<float>({2, 4})));
}

TEST_F(ExecutorTest, UninitializedVariableReadIsFailedPreconditionNamingIt) {
  auto weights = ops::Variable(root_.WithOpName("weights"), {1.0f, 2.0f});
  auto init = ops::GlobalVariablesInitializer(root_);
  auto session = NewClient(root_);
  ASSERT_TRUE(session);
  auto out = session->Run({weights});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition)
      << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("weights"));

  ASSERT_TRUE(session->RunTargets({init}).ok());
  out = session->Run({weights});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE((*out)[0].Equals(Tensor::Vector<float>({1, 2})));
}

// Executor used directly over a call graph, with its own device and thread
// pool.
class DirectExecutorTest : public ExecutorTest {
 protected:
  std::unique_ptr<Executor> Make(const CallSignature& signature,
                                 CpuDevice* device = nullptr) {
    EXPECT_TRUE(root_.ok()) << root_.status();
    auto graph = BuildCallGraph(*root_.graph(), signature);
    EXPECT_TRUE(graph.ok()) << graph.status();
    if (!graph.ok()) return nullptr;
    Executor::Options options;
    options.device = device != nullptr ? device : &device_;
    auto executor = Executor::Create(std::move(*graph), options);
    EXPECT_TRUE(executor.ok()) << executor.status();
    return executor.ok() ? std::move(*executor) : nullptr;
  }
  Executor::RunArgs Args(CallFrame* frame, CancellationManager* cm = nullptr) {
    return Executor::RunArgs{frame, ++step_, cm, &pool_};
  }

  // What RunAsync reported: the step's status, the thread that called
  // `done`, and whether it had called it before RunAsync returned.
  struct AsyncRun {
    absl::Status status = absl::UnknownError("done not called");
    std::thread::id done_thread;
    bool finished_before_return = false;
  };
  static AsyncRun RunAsyncAndWait(Executor* executor,
                                  const Executor::RunArgs& args) {
    AsyncRun run;
    absl::Notification done;
    executor->RunAsync(args, [&](absl::Status s) {
      run.status = std::move(s);
      run.done_thread = std::this_thread::get_id();
      done.Notify();
    });
    const bool finished = done.HasBeenNotified();
    done.WaitForNotification();  // the frame must outlive a step on the pool
    run.finished_before_return = finished;
    return run;
  }

  ThreadPool pool_{"test_inter_op", 2};
  ThreadPool intra_pool_{"test_intra_op", 1};
  CpuDevice device_{"/job:localhost/replica:0/task:0/device:CPU:0",
                    &intra_pool_};
  int64_t step_ = 0;
};

TEST_F(DirectExecutorTest, RunsACallGraph) {
  auto x = ops::Placeholder(root_.WithOpName("x"), DataType::kInt32, {2});
  auto y = ops::Mul(root_.WithOpName("y"), x, 3);
  auto executor = Make({{x.name()}, {y.name()}, {}});
  ASSERT_TRUE(executor);
  RunCallFrame frame({Tensor::Vector<int32_t>({1, 2})}, 1);
  ASSERT_TRUE(executor->Run(Args(&frame)).ok());
  Tensor out = frame.TakeRetvals()[0];
  EXPECT_TRUE(out.Equals(Tensor::Vector<int32_t>({3, 6}))) << out;
}

// A small step (here one expensive node) runs and finishes on the thread that
// starts it, with no hand-over to the pool: what keeps a parameter server's
// scalar update at the cost of its network round trip.
TEST_F(DirectExecutorTest, RunAsyncRunsASmallStepOnTheCallingThread) {
  auto x = ops::Placeholder(root_.WithOpName("x"), DataType::kInt32, {2});
  auto y = ops::Mul(root_.WithOpName("y"), x, 3);
  auto executor = Make({{x.name()}, {y.name()}, {}});
  ASSERT_TRUE(executor);
  RunCallFrame frame({Tensor::Vector<int32_t>({1, 2})}, 1);
  AsyncRun run = RunAsyncAndWait(executor.get(), Args(&frame));
  EXPECT_TRUE(run.finished_before_return) << "the step went to another thread";
  EXPECT_EQ(run.done_thread, std::this_thread::get_id());
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_TRUE(frame.TakeRetvals()[0].Equals(Tensor::Vector<int32_t>({3, 6})));
}

// A large step starts on the pool: its kernels stay off the caller's thread.
TEST_F(DirectExecutorTest, RunAsyncRunsALargeStepOnThePool) {
  auto x = ops::Fill(root_.WithOpName("x"), Tensor::Vector<int32_t>({1 << 16}),
                     1.0f);
  auto y = ops::Mul(root_.WithOpName("y"), x, 3.0f);
  auto executor = Make({{}, {y.name()}, {}});
  ASSERT_TRUE(executor);
  RunCallFrame frame({}, 1);
  AsyncRun run = RunAsyncAndWait(executor.get(), Args(&frame));
  EXPECT_NE(run.done_thread, std::this_thread::get_id());
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_EQ(frame.TakeRetvals()[0].flat<float>()[(1 << 16) - 1], 3.0f);
}

// Asked to (a task's RPC thread, which would only hand the step over), a
// large step runs its cheap nodes on the calling thread, and its expensive
// ones on the pool.
TEST_F(DirectExecutorTest, RunAsyncStartsALargeStepOnTheCallerWhenAsked) {
  std::vector<float> values(1 << 16, 1.0f);
  auto c = ops::Const(root_.WithOpName("c"), Tensor::Vector<float>(values));
  auto cheap = ops::Identity(root_.WithOpName("cheap"), c);
  auto expensive = ops::Mul(root_.WithOpName("expensive"), c, 3.0f);
  for (const Output& fetch : {cheap, expensive}) {
    SCOPED_TRACE(fetch.name());
    auto executor = Make({{}, {fetch.name()}, {}});
    ASSERT_TRUE(executor);
    RunCallFrame frame({}, 1);
    Executor::RunArgs args = Args(&frame);
    args.start_on_caller = true;
    AsyncRun run = RunAsyncAndWait(executor.get(), args);
    if (fetch.name() == cheap.name()) {
      EXPECT_TRUE(run.finished_before_return)
          << "the cheap step went to another thread";
      EXPECT_EQ(run.done_thread, std::this_thread::get_id());
    } else {
      EXPECT_NE(run.done_thread, std::this_thread::get_id())
          << "the expensive node ran on the caller's thread";
    }
    ASSERT_TRUE(run.status.ok()) << run.status;
    EXPECT_EQ(frame.TakeRetvals()[0].flat<float>()[(1 << 16) - 1],
              fetch.name() == cheap.name() ? 1.0f : 3.0f);
  }
}

TEST_F(DirectExecutorTest, BarrierOpsRunInParallelOnThePool) {
  TestOp(root_, kBarrierOp, "barrier_a");
  TestOp(root_, kBarrierOp, "barrier_b");
  auto executor = Make({{}, {"barrier_a:0", "barrier_b:0"}, {}});
  ASSERT_TRUE(executor);
  RunCallFrame frame({}, 2);
  EXPECT_TRUE(executor->Run(Args(&frame)).ok());
}

// Of the cheap nodes ready together, those that a _Send needs run first:
// another task waits for what is sent (a ps's variable reads before the
// constants of its updates).
TEST_F(DirectExecutorTest, CheapNodesThatASendNeedsRunFirst) {
  const std::string device = device_.name();
  Output kept = TestOp(root_, kRecordOp, "kept");
  Output sent = TestOp(root_, kRecordOp, "sent");
  Operation send =
      NodeBuilder(root_.WithOpName("send"), "_Send", "send")
          .Input(sent)
          .Attr("tensor_name", "sent:0")
          .Attr("send_device", device)
          .Attr("recv_device", device)
          .Finalize();
  auto executor = Make({{}, {kept.name()}, {send.node()->name()}});
  ASSERT_TRUE(executor);
  LocalRendezvous rendezvous;
  RunCallFrame frame({}, 1);
  Executor::RunArgs args = Args(&frame);
  args.rendezvous = &rendezvous;
  ASSERT_TRUE(executor->Run(args).ok());
  absl::MutexLock lock(&Sync().mu);
  EXPECT_EQ(Sync().ran, (std::vector<std::string>{"sent", "kept"}));
}

// A received tensor's consumer holds the only reference to it: the _Recv
// (whose context lives on while its successors run on the same thread) and
// the rendezvous let go, so a buffer mapped from another task is given back
// as soon as its consumers are done, not when the step ends.
TEST_F(DirectExecutorTest, AReceivedTensorIsHeldByItsConsumerAlone) {
  const std::string device = device_.name();
  Output received = NodeBuilder(root_.WithOpName("recv"), "_Recv", "recv")
                        .Attr("tensor_type", DataType::kFloat)
                        .Attr("tensor_name", "pushed:0")
                        .Attr("send_device", device)
                        .Attr("recv_device", device)
                        .Finalize()
                        .output(0);
  Output holders =
      NodeBuilder(root_.WithOpName("holders"), kHoldersOp, "holders")
          .Input(received)
          .Finalize()
          .output(0);
  auto executor = Make({{}, {holders.name()}, {}});
  ASSERT_TRUE(executor);
  for (const bool sent_first : {true, false}) {
    SCOPED_TRACE(sent_first);
    LocalRendezvous rendezvous;
    auto send = [&] {
      rendezvous.SendAsync(MakeRendezvousKey(device, device, "pushed:0"),
                           Tensor::Vector<float>({1, 2}),
                           [](const absl::Status&) {});
    };
    if (sent_first) send();
    RunCallFrame frame({}, 1);
    Executor::RunArgs args = Args(&frame);
    args.rendezvous = &rendezvous;
    std::thread late_sender;
    if (!sent_first) {
      late_sender = std::thread([&] {
        absl::SleepFor(absl::Milliseconds(20));
        send();
      });
    }
    absl::Status run = executor->Run(args);
    if (late_sender.joinable()) late_sender.join();
    ASSERT_TRUE(run.ok()) << run;
    EXPECT_EQ(frame.TakeRetvals()[0].scalar<int64_t>(), 1);
  }
}

// A kernel that calls itself expensive goes to the pool when other work is
// ready with it, until it has shown that it runs in less than
// Executor::kHandOverNs: from then on it runs on the thread that finds it
// ready, which is cheaper than a hand-over. One that does take long keeps
// running beside the others.
TEST_F(DirectExecutorTest, ExpensiveKernelsThatRunQuicklyStopBeingHandedOver) {
  for (const char* op : {kQuickOp, kSlowOp}) {
    SCOPED_TRACE(op);
    root_ = Scope::NewRootScope();
    Scope after_start =
        root_.WithControlDependencies({ops::NoOp(root_.WithOpName("start"))});
    Output a = TestOp(after_start, op, "a");
    Output b = TestOp(after_start, op, "b");
    auto executor = Make({{}, {a.name(), b.name()}, {}});
    ASSERT_TRUE(executor);
    auto run_and_count_here = [&] {
      RunCallFrame frame({}, 2);
      EXPECT_TRUE(executor->Run(Args(&frame)).ok());
      const std::thread::id here = std::this_thread::get_id();
      absl::MutexLock lock(&Sync().mu);
      return (Sync().ran_on["a"] == here ? 1 : 0) +
             (Sync().ran_on["b"] == here ? 1 : 0);
    };
    EXPECT_EQ(run_and_count_here(), 1) << "one of them went to the pool";
    if (op == kQuickOp) {
      // (A run that the machine happened to stall counts for a few steps.)
      int steps = 1;
      while (run_and_count_here() != 2 && steps < 100) ++steps;
      EXPECT_LT(steps, 100) << "the quick kernel kept going to the pool";
    } else {
      for (int step = 0; step < 5; ++step) EXPECT_EQ(run_and_count_here(), 1);
    }
  }
}

// Where the pools sleep when idle (a task that shares its host), a thread
// that makes two slow kernels ready runs both itself rather than wake a pool
// thread for one, as long as the intra-op pool has threads to split large
// kernels over; with one intra-op thread, the second still goes to the pool.
TEST_F(DirectExecutorTest, WherePoolsSleepExpensiveNodesStayOnTheirThread) {
  Scope after_start =
      root_.WithControlDependencies({ops::NoOp(root_.WithOpName("start"))});
  Output a = TestOp(after_start, kSlowOp, "a");
  Output b = TestOp(after_start, kSlowOp, "b");
  ThreadPool sleeping_runner("sleeping_inter_op", 2,
                             ThreadPool::IdleWait::kSleep);
  for (int intra_op_threads : {2, 1}) {
    SCOPED_TRACE(absl::StrCat(intra_op_threads, " intra-op threads"));
    ThreadPool intra_op("sleeping_intra_op", intra_op_threads,
                        ThreadPool::IdleWait::kSleep);
    CpuDevice device(device_.name(), &intra_op);
    auto executor = Make({{}, {a.name(), b.name()}, {}}, &device);
    ASSERT_TRUE(executor);
    for (int step = 0; step < 3; ++step) {
      RunCallFrame frame({}, 2);
      Executor::RunArgs args = Args(&frame);
      args.runner = &sleeping_runner;
      ASSERT_TRUE(executor->Run(args).ok());
      const std::thread::id here = std::this_thread::get_id();
      absl::MutexLock lock(&Sync().mu);
      const int ran_here = (Sync().ran_on["a"] == here ? 1 : 0) +
                           (Sync().ran_on["b"] == here ? 1 : 0);
      EXPECT_EQ(ran_here, intra_op_threads > 1 ? 2 : 1);
    }
  }
}

TEST_F(DirectExecutorTest, CancelledBeforeRunIsCancelled) {
  auto y = ops::Add(root_.WithOpName("y"), 1, 2);
  auto executor = Make({{}, {y.name()}, {}});
  ASSERT_TRUE(executor);
  CancellationManager cm;
  cm.StartCancel();
  RunCallFrame frame({}, 1);
  absl::Status s = executor->Run(Args(&frame, &cm));
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  EXPECT_FALSE(frame.TakeRetvals()[0].IsInitialized())
      << "a node ran in a cancelled step";
}

TEST_F(DirectExecutorTest, CancelledDuringRunIsCancelled) {
  TestOp(root_, kBlockerOp, "blocker");
  auto executor = Make({{}, {"blocker:0"}, {}});
  ASSERT_TRUE(executor);
  CancellationManager cm;
  std::thread canceller([&cm] {
    absl::SleepFor(absl::Milliseconds(50));
    cm.StartCancel();
  });
  RunCallFrame frame({}, 1);
  const absl::Time begin = absl::Now();
  absl::Status s = executor->Run(Args(&frame, &cm));
  canceller.join();
  EXPECT_LT(absl::Now() - begin, absl::Seconds(5));
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
}

}  // namespace
}  // namespace distflow
