// The distributed runtime end to end: real gRPC servers on 127.0.0.1, a
// grpc:// session, graphs placed across tasks.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "base/step_trace.h"
#include "base/thread_pool.h"
#include "distflow/distflow.h"
#include "distflow/server.h"
#include "distributed/rpc/grpc_remote_worker.h"
#include "distributed/rpc/grpc_server.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/same_host.h"
#include "distributed/rpc/tensor_wire.h"
#include "distributed/rpc/test_cluster.h"
#include "distributed/worker.h"
#include "gmock/gmock.h"
#include "graph/attr_value.h"
#include "gtest/gtest.h"
#include "proto/worker.grpc.pb.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

TEST(DistributedRuntimeTest, BetweenGraphMatMulWithVariablesOnPs) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Scope root = Scope::NewRootScope();
  Scope ps = root.WithDevice("/job:ps/task:0");
  ops::Variable x(ps.WithOpName("x"), Tensor::Matrix<int32_t>({{1, 2, 3, 4}}));
  ops::Variable w(ps.WithOpName("w"),
                  Tensor::Matrix<int32_t>({{2}, {2}, {2}, {2}}));
  Output product = ops::MatMul(
      root.WithDevice("/job:worker/task:0").WithOpName("product"), x, w);
  Operation init = ops::GlobalVariablesInitializer(root);

  auto session = ClientSession::Create(
      root, SessionTarget((*cluster)->server("worker", 0)));
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_EQ((*session)->RunTargets({init}), absl::OkStatus());
  for (int step = 0; step < 3; ++step) {
    auto out = (*session)->Run({product});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].DebugString(), "[[20]]");
  }
}

// A step trace shows a step that crosses tasks: the master's step, each
// task's partition, the ops on either side, and the large tensor's read by
// the same-host path.
TEST(DistributedRuntimeTest, StepTraceShowsThePartitionsAndTheTransfer) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Scope root = Scope::NewRootScope();
  ops::Variable big(root.WithDevice("/job:ps/task:0").WithOpName("big"),
                    ops::Fill(root, Tensor::Vector<int32_t>({1 << 18}), 1.0f));
  Output sum = ops::Sum(root.WithDevice("/job:worker/task:0").WithOpName("sum"),
                        big, Tensor::Vector<int32_t>({0}));
  Operation init = ops::GlobalVariablesInitializer(root);
  auto session = ClientSession::Create(
      root, SessionTarget((*cluster)->server("worker", 0)));
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_EQ((*session)->RunTargets({init}), absl::OkStatus());
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/distributed_trace.json");
  trace::Start(path, 100000);
  auto out = (*session)->Run({sum});
  ASSERT_TRUE(trace::Stop().ok());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 1 << 18);
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  for (const char* expected : {R"("name":"step")", R"("name":"partition")",
                                R"("name":"big")", R"("name":"sum")"}) {
    EXPECT_THAT(text, HasSubstr(expected));
  }
  // (Held to TCP, the first large push goes over gRPC, whose answer offers
  // the data connection that later ones take.)
  if (SameHostTransportAllowedByEnv()) {
    EXPECT_THAT(text, HasSubstr(R"("name":"same-host read of 1048576 bytes")"));
  }
  std::remove(path.c_str());
}

TEST(DistributedRuntimeTest, VariablesOnPsOutliveOneWorkersSession) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 2}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  // Each worker builds the same graph (between-graph replication): the
  // counter on the ps is shared.
  auto build = [](Scope* root, Output* tick, Operation* init) {
    Scope ps = root->WithDevice("/job:ps/task:0");
    ops::Variable counter(ps.WithOpName("counter"), Tensor::Scalar<float>(0));
    *tick = ops::AssignAdd(root->WithOpName("tick"), counter, 1.0f);
    *init = ops::GlobalVariablesInitializer(*root);
  };
  Scope root0 = Scope::NewRootScope(), root1 = Scope::NewRootScope();
  Output tick0, tick1;
  Operation init0, init1;
  build(&root0, &tick0, &init0);
  build(&root1, &tick1, &init1);
  auto s0 = ClientSession::Create(
      root0, SessionTarget((*cluster)->server("worker", 0)));
  auto s1 = ClientSession::Create(
      root1, SessionTarget((*cluster)->server("worker", 1)));
  ASSERT_TRUE(s0.ok()) << s0.status();
  ASSERT_TRUE(s1.ok()) << s1.status();
  ASSERT_EQ((*s0)->RunTargets({init0}), absl::OkStatus());
  ASSERT_EQ((*s0)->Run({tick0}).status(), absl::OkStatus());
  auto out = (*s1)->Run({tick1});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 2.0f);
}

TEST(DistributedRuntimeTest, InGraphVariablesOnTwoPsComputeOnTwoWorkers) {
  auto cluster = TestCluster::Create({{"ps", 2}, {"worker", 2}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Scope root = Scope::NewRootScope();
  ops::Variable a(root.WithDevice("/job:ps/task:0").WithOpName("a"),
                  Tensor::Matrix<float>({{1, 2}, {3, 4}}));
  ops::Variable b(root.WithDevice("/job:ps/task:1").WithOpName("b"),
                  Tensor::Matrix<float>({{1, 0}, {0, 1}}));
  Output ab = ops::MatMul(root.WithDevice("/job:worker/task:0"), a, b);
  Output sum = ops::Add(root.WithDevice("/job:worker/task:1"), ab, a);
  Operation init = ops::GlobalVariablesInitializer(root);
  // The client talks to worker 1's master, as in seed 003.
  auto session = ClientSession::Create(
      root, SessionTarget((*cluster)->server("worker", 1)));
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_EQ((*session)->RunTargets({init}), absl::OkStatus());
  auto out = (*session)->Run({sum});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].DebugString(), "[[2 4]\n [6 8]]");
}

TEST(DistributedRuntimeTest, FeedsAndControlEdgesCrossTasks) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Scope root = Scope::NewRootScope();
  Scope ps = root.WithDevice("/job:ps/task:0");
  ops::Variable v(ps.WithOpName("v"), Tensor::Scalar<float>(0));
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
  Output assign = ops::Assign(ps.WithOpName("assign"), v, x);
  // The worker's op depends on the ps's assignment by a control edge only:
  // the assignment runs because the edge crosses the tasks.
  Output done = ops::Const(
      root.WithControlDependencies({assign.op()}).WithOpName("done"), 1.0f);
  Operation init = ops::GlobalVariablesInitializer(root);
  auto session = ClientSession::Create(
      root, SessionTarget((*cluster)->server("worker", 0)));
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_EQ((*session)->RunTargets({init}), absl::OkStatus());
  auto out = (*session)->Run({{x, Tensor::Scalar<float>(7)}}, {done});
  ASSERT_TRUE(out.ok()) << out.status();
  out = (*session)->Run({v});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 7.0f);
}

TEST(DistributedRuntimeTest, UnknownJobIsAnErrorListingTheClustersJobs) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Scope root = Scope::NewRootScope();
  Output c =
      ops::Const(root.WithDevice("/job:ps/task:3").WithOpName("c"), 1.0f);
  auto session = ClientSession::Create(
      root, SessionTarget((*cluster)->server("worker", 0)));
  ASSERT_TRUE(session.ok()) << session.status();
  auto out = (*session)->Run({c});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("/job:ps/replica:0/task:3"));
  EXPECT_THAT(out.status().message(), HasSubstr("ps (1 task)"));
  EXPECT_THAT(out.status().message(), HasSubstr("worker (1 task)"));
}

TEST(DistributedRuntimeTest, DeadPsGivesUnavailableNamingItsAddress) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  DoubledPsVariable model(cluster->get());
  ASSERT_EQ(model.ready, absl::OkStatus());
  ClientSession* session = model.session.get();
  const std::string ps_address = (*cluster)->address("ps", 0);
  (*cluster)->Kill("ps", 0);
  const auto start = std::chrono::steady_clock::now();
  auto out = session->Run({model.doubled});
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnavailable)
      << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr(ps_address));
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

TEST(DistributedRuntimeTest, RestartedPsIsToldApartAndReregistered) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  DoubledPsVariable model(cluster->get());
  ASSERT_EQ(model.ready, absl::OkStatus());
  ClientSession* session = model.session.get();
  const uint64_t before = (*cluster)->server("ps", 0)->worker()->incarnation();
  ASSERT_EQ((*cluster)->Restart("ps", 0), absl::OkStatus());
  EXPECT_NE((*cluster)->server("ps", 0)->worker()->incarnation(), before);
  // The step that meets the restarted task fails with ABORTED (its graphs are
  // gone); the session then registers afresh, and the new task's variables
  // must be initialized again.
  absl::Status first = session->Run({model.doubled}).status();
  if (!first.ok()) {
    EXPECT_TRUE(absl::IsAborted(first) || absl::IsUnavailable(first)) << first;
  }
  auto out = model.RunOnceRecovered();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 6.0f);
}

TEST(DistributedRuntimeTest, PortInUseIsAnErrorNamingIt) {
  auto cluster = TestCluster::Create({{"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::string taken = (*cluster)->address("worker", 0);
  auto second = GrpcServer::Create({{"worker", {taken}}}, "worker", 0);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr(taken));
}

TEST(DistributedRuntimeTest, ShutdownTaskEndsJoin) {
  auto cluster = TestCluster::Create({{"ps", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  GrpcServer* ps = (*cluster)->server("ps", 0);
  absl::Status joined = absl::UnknownError("not joined");
  std::thread joiner([&] { joined = ps->Join(); });
  ASSERT_EQ(ShutdownTask((*cluster)->address("ps", 0)), absl::OkStatus());
  joiner.join();
  EXPECT_TRUE(joined.ok()) << joined;
}

// The public Server: a port of 0 is bound to a free one that target() names,
// a session on that target runs, and Stop() from this process ends Join();
// the stopped task then refuses sessions, naming its address.
TEST(DistributedRuntimeTest, ServerOnPortZeroNamesItsPortAndStopEndsJoin) {
  auto cluster = ClusterSpec::Create({{"worker", {"127.0.0.1:0"}}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto server = Server::Create(*cluster, "worker", 0);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  ASSERT_GT(port, 0);
  const std::string address = absl::StrCat("127.0.0.1:", port);
  EXPECT_EQ((*server)->target(), "grpc://" + address);

  Scope root = Scope::NewRootScope();
  Output sum = ops::Add(root, ops::Const(root, 1.0f), ops::Const(root, 2.0f));
  SessionOptions options;
  options.target = (*server)->target();
  auto session = ClientSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  auto out = (*session)->Run({sum});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 3.0f);

  absl::Notification joined;
  absl::Status join_status = absl::UnknownError("not joined");
  std::thread joiner([&] {
    join_status = (*server)->Join();
    joined.Notify();
  });
  EXPECT_FALSE(joined.WaitForNotificationWithTimeout(absl::Milliseconds(100)));
  EXPECT_EQ((*server)->Stop(), absl::OkStatus());
  EXPECT_TRUE(joined.WaitForNotificationWithTimeout(absl::Seconds(10)));
  joiner.join();
  EXPECT_EQ(join_status, absl::OkStatus());
  EXPECT_EQ((*server)->Stop(), absl::OkStatus());  // idempotent

  auto after = ClientSession::Create(root, options);
  absl::Status refused =
      after.ok() ? (*after)->Run({sum}).status() : after.status();
  EXPECT_TRUE(absl::IsUnavailable(refused)) << refused;
  EXPECT_THAT(refused.message(), HasSubstr(address));
}

}  // namespace
}  // namespace distflow

namespace distflow {
namespace {

// A task that a push fails to reach: it answers every call with an error and
// records the AbortStep it is sent.
class UnreachableWorker : public WorkerInterface {
 public:
  void GetStatusAsync(const proto::GetStatusRequest*, proto::GetStatusResponse*,
                      StatusCallback done) override {
    done(Gone());
  }
  void RegisterGraphAsync(const proto::RegisterGraphRequest*,
                          proto::RegisterGraphResponse*,
                          StatusCallback done) override {
    done(Gone());
  }
  void DeregisterGraphAsync(const proto::DeregisterGraphRequest*,
                            proto::DeregisterGraphResponse*,
                            StatusCallback done) override {
    done(Gone());
  }
  void RunGraphAsync(const proto::RunGraphRequest*, proto::RunGraphResponse*,
                     StatusCallback done) override {
    done(Gone());
  }
  void AbortStepAsync(const proto::AbortStepRequest* request,
                      proto::AbortStepResponse*, StatusCallback done) override {
    abort_request = *request;
    aborted.Notify();
    done(absl::OkStatus());
  }
  void PushTensorAsync(int64_t, const std::string&, Tensor,
                       StatusCallback done) override {
    done(Gone());
  }
  void ShutdownAsync(const proto::ShutdownRequest*, proto::ShutdownResponse*,
                     StatusCallback done) override {
    done(Gone());
  }
  static absl::Status Gone() {
    return absl::UnavailableError("task /job:ps/replica:0/task:0 is gone");
  }

  proto::AbortStepRequest abort_request;
  absl::Notification aborted;
};

class OneWorkerCache : public WorkerCacheInterface {
 public:
  explicit OneWorkerCache(WorkerInterface* worker) : worker_(worker) {}
  absl::StatusOr<WorkerInterface*> GetWorker(const std::string&) override {
    return worker_;
  }
  std::string AddressOf(const std::string&) override { return "nowhere:1"; }

 private:
  WorkerInterface* const worker_;
};

// The producer's send finishes without waiting for the receiver's
// acknowledgement; a push that fails aborts the step on the receiver, with
// the reason and the tensor's key.
TEST(DistributedRuntimeTest, FailedPushAbortsTheStepOnTheReceiver) {
  UnreachableWorker receiver;
  OneWorkerCache cache(&receiver);
  ThreadPool pool("test", 1);
  WorkerEnv env;
  env.task_name = "/job:worker/replica:0/task:0";
  env.worker_cache = &cache;
  env.inter_op_pool = &pool;
  env.intra_op_pool = &pool;
  Worker worker(std::move(env));
  const std::string worker_device = "/job:worker/replica:0/task:0/device:CPU:0";
  const std::string ps_device = "/job:ps/replica:0/task:0/device:CPU:0";
  proto::RegisterGraphRequest reg;
  proto::NodeDef* value = reg.mutable_graph()->add_node();
  value->set_name("value");
  value->set_op("Const");
  (*value->mutable_attr())["dtype"] = MakeAttr(DataType::kFloat);
  (*value->mutable_attr())["value"] = MakeAttr(Tensor::Scalar<float>(3));
  proto::NodeDef* send = reg.mutable_graph()->add_node();
  send->set_name("send");
  send->set_op("_Send");
  send->add_input("value");
  (*send->mutable_attr())["T"] = MakeAttr(DataType::kFloat);
  (*send->mutable_attr())["tensor_name"] = MakeAttr("value:0");
  (*send->mutable_attr())["send_device"] = MakeAttr(worker_device);
  (*send->mutable_attr())["recv_device"] = MakeAttr(ps_device);
  proto::RegisterGraphResponse reg_response;
  absl::Status reg_status = absl::UnknownError("not called");
  worker.RegisterGraphAsync(&reg, &reg_response,
                            [&](const absl::Status& s) { reg_status = s; });
  ASSERT_TRUE(reg_status.ok()) << reg_status;

  proto::RunGraphRequest run;
  run.set_graph_handle(reg_response.graph_handle());
  run.set_step_id(5);
  proto::RunGraphResponse run_response;
  absl::Notification ran;
  absl::Status run_status;
  worker.RunGraphAsync(&run, &run_response, [&](const absl::Status& s) {
    run_status = s;
    ran.Notify();
  });
  ASSERT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(run_status.ok()) << run_status;
  ASSERT_TRUE(
      receiver.aborted.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(receiver.abort_request.step_id(), 5);
  EXPECT_EQ(receiver.abort_request.code(),
            static_cast<int>(absl::StatusCode::kUnavailable));
  EXPECT_THAT(receiver.abort_request.message(), HasSubstr("value:0"));
  EXPECT_THAT(receiver.abort_request.message(), HasSubstr("is gone"));
}

// A remote worker destroyed while a push is in flight (a send completes
// before its push is acknowledged) cancels it and runs its callback first.
TEST(DistributedRuntimeTest, DestroyingARemoteWorkerEndsItsPushesFirst) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::string address = (*cluster)->address("ps", 0);
  auto remote = NewGrpcRemoteWorker(NewChannel(address),
                                    "/job:ps/replica:0/task:0", address);
  std::atomic<bool> called{false};
  remote->PushTensorAsync(
      9,
      MakeRendezvousKey("/job:worker/replica:0/task:0/device:CPU:0",
                        "/job:ps/replica:0/task:0/device:CPU:0", "big:0"),
      Tensor(DataType::kFloat, TensorShape({16 << 20})),
      [&called](const absl::Status&) { called = true; });
  remote.reset();
  EXPECT_TRUE(called.load());
}

constexpr char kPsDevice[] = "/job:ps/replica:0/task:0/device:CPU:0";
constexpr char kWorkerDevice[] = "/job:worker/replica:0/task:0/device:CPU:0";

// Polls `holds` until it is true, for at most 10 s: a bound for a failure
// only, as the events waited for may be slow on a loaded machine.
bool Eventually(const std::function<bool()>& holds) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!holds()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

// Whether `server`'s worker has a step under way (its RunGraph has arrived).
bool RunsAStep(GrpcServer* server) {
  return !server->worker()->IdleFor(absl::ZeroDuration());
}

// Registers on the ps a graph that waits for tensor `tensor_name` from the
// worker and fetches it, as registered by the master of `master_task` (none
// when empty), and returns its handle.
std::string RegisterGraphThatWaits(Worker* ps, const std::string& tensor_name,
                                   const std::string& master_task) {
  proto::RegisterGraphRequest reg;
  proto::NodeDef* recv = reg.mutable_graph()->add_node();
  recv->set_name("recv");
  recv->set_op("_Recv");
  (*recv->mutable_attr())["tensor_type"] = MakeAttr(DataType::kFloat);
  (*recv->mutable_attr())["tensor_name"] = MakeAttr(tensor_name);
  (*recv->mutable_attr())["send_device"] = MakeAttr(kWorkerDevice);
  (*recv->mutable_attr())["recv_device"] = MakeAttr(kPsDevice);
  proto::NodeDef* retval = reg.mutable_graph()->add_node();
  retval->set_name("out");
  retval->set_op("_Retval");
  retval->add_input("recv");
  (*retval->mutable_attr())["T"] = MakeAttr(DataType::kFloat);
  (*retval->mutable_attr())["index"] = MakeAttr(int64_t{0});
  if (!master_task.empty()) {
    reg.set_master_task(master_task);
    reg.set_master_incarnation("1");
  }
  proto::RegisterGraphResponse reg_response;
  absl::Status reg_status = absl::UnknownError("not called");
  ps->RegisterGraphAsync(&reg, &reg_response,
                         [&](const absl::Status& s) { reg_status = s; });
  EXPECT_TRUE(reg_status.ok()) << reg_status;
  return reg_response.graph_handle();
}

// A graph that waits on the ps for a tensor that the worker never sends.
std::string RegisterGraphThatWaits(GrpcServer* ps) {
  return RegisterGraphThatWaits(ps->worker(), "never_sent:0", "");
}

// A tensor pushed by the task whose master runs the step is answered before
// the step's work that it starts (the master can then get ready for the
// step's answer); one from another task after that work, as before.
TEST(DistributedRuntimeTest, APushFromTheStepsMasterIsAnsweredFirst) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Worker* ps = (*cluster)->server("ps", 0)->worker();
  const std::string master = "/job:worker/replica:0/task:0";
  for (const bool from_master : {true, false}) {
    // The ps's partition ends with the pushed tensor: its work runs on the
    // thread that delivers it.
    const std::string handle = RegisterGraphThatWaits(
        ps, "x:0", from_master ? master : "/job:worker/replica:0/task:1");
    const int64_t step = from_master ? 91 : 92;
    proto::RunGraphRequest run;
    run.set_graph_handle(handle);
    run.set_step_id(step);
    run.set_num_fetches(1);
    proto::RunGraphResponse run_response;
    absl::Mutex mu;
    std::vector<std::string> order;
    absl::Notification ended;
    ps->RunGraphAsync(&run, &run_response, [&](const absl::Status& s) {
      EXPECT_TRUE(s.ok()) << s;
      absl::MutexLock lock(&mu);
      order.push_back("step ended");
      ended.Notify();
    });
    absl::Notification answered;
    const std::string key = MakeRendezvousKey(kWorkerDevice, kPsDevice, "x:0");
    ps->PushTensorAsync(step, key, Tensor::Scalar<float>(3),
                        [&](const absl::Status& s) {
                          EXPECT_TRUE(s.ok()) << s;
                          absl::MutexLock lock(&mu);
                          order.push_back("push answered");
                          answered.Notify();
                        });
    ASSERT_TRUE(ended.WaitForNotificationWithTimeout(absl::Seconds(10)));
    ASSERT_TRUE(answered.WaitForNotificationWithTimeout(absl::Seconds(10)));
    absl::MutexLock lock(&mu);
    const std::vector<std::string> want =
        from_master ? std::vector<std::string>{"push answered", "step ended"}
                    : std::vector<std::string>{"step ended", "push answered"};
    EXPECT_EQ(order, want) << (from_master ? "from the master"
                                           : "from another task");
  }
}

// A step whose master goes away while the ps waits for a tensor is aborted
// on the ps (it does not wait forever): tensors for it are refused after.
TEST(DistributedRuntimeTest, CancelledRunGraphAbortsTheStepOnTheTask) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  GrpcServer* ps = (*cluster)->server("ps", 0);
  const std::string ps_device = kPsDevice;
  const std::string worker_device = kWorkerDevice;
  const std::string graph_handle = RegisterGraphThatWaits(ps);

  constexpr int64_t kStep = 77;
  auto stub =
      proto::WorkerService::NewStub(NewChannel((*cluster)->address("ps", 0)));
  proto::RunGraphRequest run;
  run.set_graph_handle(graph_handle);
  run.set_step_id(kStep);
  run.set_num_fetches(1);
  proto::RunGraphResponse run_response;
  grpc::ClientContext ctx;
  absl::Notification finished;
  grpc::Status run_status;
  stub->async()->RunGraph(&ctx, &run, &run_response, [&](grpc::Status s) {
    run_status = s;
    finished.Notify();
  });
  // The step waits on the ps for "never_sent"; then its caller goes away.
  // (Cancelled before it reached the ps, the call would leave nothing there
  // to abort.)
  ASSERT_TRUE(Eventually([ps] { return RunsAStep(ps); }))
      << "RunGraph of step " << kStep << " did not reach the ps";
  ASSERT_FALSE(finished.HasBeenNotified())
      << run_status.error_code() << " " << run_status.error_message();
  ctx.TryCancel();
  ASSERT_TRUE(finished.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(run_status.error_code(), grpc::StatusCode::CANCELLED);
  // The ps aborts the step (the caller's side of the call ends first):
  // the step goes, and a late tensor for it is refused. (Not the tensor the
  // step waits for, which would end the step by itself.)
  ASSERT_TRUE(Eventually([ps] { return !RunsAStep(ps); }))
      << "the ps still runs step " << kStep << " after its caller went away";
  absl::Status late;
  absl::Notification pushed;
  ps->worker()->PushTensorAsync(
      kStep, MakeRendezvousKey(worker_device, ps_device, "unrelated:0"),
      Tensor::Scalar<float>(1), [&](const absl::Status& s) {
        late = s;
        pushed.Notify();
      });
  ASSERT_TRUE(pushed.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(absl::IsAborted(late)) << late;
}

// A ps stopped in the middle of a step fails the step's RunGraph with an
// error that names the ps and its address and says that it stopped, not a
// bare CANCELLED.
TEST(DistributedRuntimeTest, PsStoppedMidStepIsAnErrorNamingIt) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::string address = (*cluster)->address("ps", 0);
  const std::string task = "/job:ps/replica:0/task:0";
  proto::RunGraphRequest run;
  run.set_graph_handle(RegisterGraphThatWaits((*cluster)->server("ps", 0)));
  run.set_step_id(78);
  run.set_num_fetches(1);
  proto::RunGraphResponse response;
  auto remote = NewGrpcRemoteWorker(NewChannel(address), task, address);
  absl::Notification finished;
  absl::Status status;
  remote->RunGraphAsync(&run, &response, [&](const absl::Status& s) {
    status = s;
    finished.Notify();
  });
  GrpcServer* ps = (*cluster)->server("ps", 0);
  ASSERT_TRUE(Eventually([ps] { return RunsAStep(ps); }))
      << "RunGraph did not reach the ps";
  EXPECT_FALSE(finished.HasBeenNotified()) << status;
  (*cluster)->Kill("ps", 0);
  ASSERT_TRUE(finished.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_THAT(status.ToString(), HasSubstr(task));
  EXPECT_THAT(status.ToString(), HasSubstr(address));
  EXPECT_THAT(status.ToString(), HasSubstr("stop"));
}

// A task's threads sleep when idle if another task shares its host (they
// would take its cores by polling), and poll first otherwise, unless the
// options say which.
TEST(DistributedRuntimeTest, TasksSharingAHostSleepWhenIdle) {
  using Wait = ThreadPool::IdleWait;
  const ServerOptions automatic;
  const ClusterMap one_host = {{"ps", {"127.0.0.1:2222"}},
                               {"worker", {"localhost:2223"}}};
  EXPECT_EQ(IdleWaitOfTask(automatic, one_host, "ps", 0), Wait::kSleep);
  EXPECT_EQ(IdleWaitOfTask(automatic, one_host, "worker", 0), Wait::kSleep);
  const ClusterMap own_hosts = {{"ps", {"ps0.example:2222"}},
                                {"worker", {"w0.example:2222", "w1.example:2222"}}};
  EXPECT_EQ(IdleWaitOfTask(automatic, own_hosts, "worker", 1),
            Wait::kSpinThenSleep);
  const ClusterMap shared_worker_host = {
      {"ps", {"ps0.example:2222"}},
      {"worker", {"w0.example:2222", "w0.example:2223"}}};
  EXPECT_EQ(IdleWaitOfTask(automatic, shared_worker_host, "ps", 0),
            Wait::kSpinThenSleep);
  EXPECT_EQ(IdleWaitOfTask(automatic, shared_worker_host, "worker", 1),
            Wait::kSleep);
  ServerOptions poll;
  poll.idle_threads = ServerOptions::IdleThreads::kPoll;
  EXPECT_EQ(IdleWaitOfTask(poll, one_host, "ps", 0), Wait::kSpinThenSleep);
  ServerOptions sleep;
  sleep.idle_threads = ServerOptions::IdleThreads::kSleep;
  EXPECT_EQ(IdleWaitOfTask(sleep, own_hosts, "ps", 0), Wait::kSleep);
}

}  // namespace
}  // namespace distflow
