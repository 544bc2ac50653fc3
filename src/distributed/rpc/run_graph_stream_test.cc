// RunGraph calls on the stream a task keeps to another (run_graph_stream.h),
// against a real ps server on 127.0.0.1: overlapping calls each get their own
// answer, a call past its deadline fails alone, and a caller that goes away
// leaves no step running on the task; a task that stops fails the calls
// waiting on it.
#include "distributed/rpc/run_graph_stream.h"

#include <cstdint>
#include <memory>
#include <string>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "distflow/tensor.h"
#include "distributed/rpc/completion_queue_threads.h"
#include "distributed/rpc/grpc_remote_worker.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/tensor_wire.h"
#include "distributed/rpc/test_cluster.h"
#include "distributed/worker.h"
#include "gmock/gmock.h"
#include "graph/attr_value.h"
#include "gtest/gtest.h"
#include "runtime/rendezvous.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

constexpr char kPsDevice[] = "/job:ps/replica:0/task:0/device:CPU:0";
constexpr char kWorkerDevice[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr char kPs[] = "/job:ps/replica:0/task:0";

// A RunGraph call's outcome, filled in on a polling thread.
struct Outcome {
  proto::RunGraphResponse response;
  absl::Status status = absl::UnknownError("no answer");
  absl::Notification done;
};

class RunGraphStreamTest : public PsAndWorkerTest {
 protected:
  void SetUp() override {
    PsAndWorkerTest::SetUp();
    ps_ = cluster_->server("ps", 0);
  }

  // A stream to the ps, its calls' events polled by a thread of its own.
  std::shared_ptr<RunGraphStreamClient> Connect() {
    threads_ =
        std::make_unique<CompletionQueueThreads>("stream_test", nullptr, 1);
    stub_ =
        proto::WorkerService::NewStub(NewChannel(cluster_->address("ps", 0)));
    return RunGraphStreamClient::Open(
        [stub = stub_.get()](grpc::ClientContext* ctx,
                             grpc::CompletionQueue* cq) {
          return stub->PrepareAsyncRunGraphStream(ctx, cq);
        },
        threads_.get(), kPs, cluster_->address("ps", 0));
  }

  // Registers on the ps a graph whose one output is `node` (added to it),
  // and returns its handle.
  std::string Register(const proto::NodeDef& node) {
    proto::RegisterGraphRequest reg;
    *reg.mutable_graph()->add_node() = node;
    proto::NodeDef* retval = reg.mutable_graph()->add_node();
    retval->set_name("out");
    retval->set_op("_Retval");
    retval->add_input(node.name());
    (*retval->mutable_attr())["T"] = MakeAttr(DataType::kFloat);
    (*retval->mutable_attr())["index"] = MakeAttr(int64_t{0});
    proto::RegisterGraphResponse registered;
    absl::Status status = absl::UnknownError("not called");
    ps_->worker()->RegisterGraphAsync(
        &reg, &registered, [&](const absl::Status& s) { status = s; });
    EXPECT_TRUE(status.ok()) << status;
    incarnation_ = registered.incarnation();
    return registered.graph_handle();
  }

  // A graph that waits for the tensor "x:0" from the worker.
  std::string RegisterWaiting() {
    proto::NodeDef recv;
    recv.set_name("recv");
    recv.set_op("_Recv");
    (*recv.mutable_attr())["tensor_type"] = MakeAttr(DataType::kFloat);
    (*recv.mutable_attr())["tensor_name"] = MakeAttr("x:0");
    (*recv.mutable_attr())["send_device"] = MakeAttr(kWorkerDevice);
    (*recv.mutable_attr())["recv_device"] = MakeAttr(kPsDevice);
    return Register(recv);
  }

  // A graph that answers at once with `value`.
  std::string RegisterConst(float value) {
    proto::NodeDef constant;
    constant.set_name("c");
    constant.set_op("Const");
    (*constant.mutable_attr())["dtype"] = MakeAttr(DataType::kFloat);
    (*constant.mutable_attr())["value"] =
        MakeAttr(Tensor::Scalar<float>(value));
    return Register(constant);
  }

  std::unique_ptr<Outcome> Run(RunGraphStreamClient* stream,
                               const std::string& handle, int64_t step,
                               absl::Duration timeout = absl::Minutes(1)) {
    auto outcome = std::make_unique<Outcome>();
    proto::RunGraphRequest request;
    request.set_graph_handle(handle);
    request.set_incarnation(incarnation_);
    request.set_step_id(step);
    request.set_num_fetches(1);
    Outcome* out = outcome.get();
    const bool taken = stream->Call(request, &out->response, timeout,
                                    [out](const absl::Status& s) {
                                      out->status = s;
                                      out->done.Notify();
                                    });
    EXPECT_TRUE(taken) << "the stream refused a call";
    return outcome;
  }

  static float Fetched(const Outcome& outcome) {
    std::vector<Tensor> fetches;
    absl::Status s = DecodeRunGraphFetches(outcome.response, 1, &fetches);
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() ? fetches[0].scalar<float>() : -1;
  }

  // Whether the ps has a step under way.
  bool PsRunsAStep() { return !ps_->worker()->IdleFor(absl::ZeroDuration()); }

  static bool Eventually(const std::function<bool()>& holds) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (!holds()) {
      if (absl::Now() > deadline) return false;
      absl::SleepFor(absl::Milliseconds(1));
    }
    return true;
  }

  // Declared first: destroyed after the streams that use them (and the
  // cluster, in the base, after them).
  std::unique_ptr<CompletionQueueThreads> threads_;
  std::unique_ptr<proto::WorkerService::Stub> stub_;
  GrpcServer* ps_ = nullptr;
  uint64_t incarnation_ = 0;
};

// A step that waits, then a step that does not, on one stream: the second's
// answer comes first, and each answer reaches its own caller.
TEST_F(RunGraphStreamTest, OverlappingCallsEachGetTheirOwnAnswer) {
  auto stream = Connect();
  const std::string waiting = RegisterWaiting();
  const std::string constant = RegisterConst(5.0f);
  auto first = Run(stream.get(), waiting, 101);
  ASSERT_TRUE(Eventually([this] { return PsRunsAStep(); }));
  auto second = Run(stream.get(), constant, 102);
  ASSERT_TRUE(second->done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_TRUE(second->status.ok()) << second->status;
  EXPECT_EQ(Fetched(*second), 5.0f);
  EXPECT_FALSE(first->done.HasBeenNotified());

  absl::Notification pushed;
  ps_->worker()->PushTensorAsync(
      101, MakeRendezvousKey(kWorkerDevice, kPsDevice, "x:0"),
      Tensor::Scalar<float>(7.0f),
      [&](const absl::Status&) { pushed.Notify(); });
  ASSERT_TRUE(first->done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_TRUE(first->status.ok()) << first->status;
  EXPECT_EQ(Fetched(*first), 7.0f);
  pushed.WaitForNotification();
  stream->Close();
}

// A call past the step deadline fails by itself, naming the task, and the
// task aborts its step; the stream stays usable.
TEST_F(RunGraphStreamTest, ACallPastItsDeadlineFailsNamingTheTask) {
  auto stream = Connect();
  const std::string waiting = RegisterWaiting();
  const std::string constant = RegisterConst(3.0f);
  const absl::Time start = absl::Now();
  auto late = Run(stream.get(), waiting, 201, absl::Milliseconds(300));
  ASSERT_TRUE(late->done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_TRUE(absl::IsDeadlineExceeded(late->status)) << late->status;
  EXPECT_THAT(late->status.message(), HasSubstr(cluster_->address("ps", 0)));
  EXPECT_THAT(late->status.message(), HasSubstr("RunGraph"));
  // The ps aborted the step, as the end of a unary call's deadline does.
  EXPECT_TRUE(Eventually([this] { return !PsRunsAStep(); }))
      << "the ps still runs a step whose caller gave up on it";

  auto next = Run(stream.get(), constant, 202);
  ASSERT_TRUE(next->done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_TRUE(next->status.ok()) << next->status;
  EXPECT_EQ(Fetched(*next), 3.0f);
  stream->Close();
}

// A caller that goes away (its stream closed) while its step waits on the
// ps: the call fails CANCELLED and the ps aborts the step instead of waiting
// forever.
TEST_F(RunGraphStreamTest, ACallerThatGoesAwayLeavesNoStepRunning) {
  auto stream = Connect();
  const std::string waiting = RegisterWaiting();
  auto waits = Run(stream.get(), waiting, 301);
  ASSERT_TRUE(Eventually([this] { return PsRunsAStep(); }));
  stream->Close();
  ASSERT_TRUE(waits->done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(absl::IsCancelled(waits->status)) << waits->status;
  EXPECT_TRUE(Eventually([this] { return !PsRunsAStep(); }))
      << "the ps still runs the step of a caller that went away";
}

// The ps stops (and a new one starts on its port) while a call waits on the
// stream: the call fails naming the ps's address, the old server stops
// cleanly, and a worker's next RunGraph goes on a new stream to the new ps.
TEST_F(RunGraphStreamTest, ATaskThatStopsFailsItsCallsAndANewStreamFollows) {
  auto stream = Connect();
  auto waits = Run(stream.get(), RegisterWaiting(), 401);
  ASSERT_TRUE(Eventually([this] { return PsRunsAStep(); }));
  RpcDeadlines deadlines;
  auto worker = NewGrpcRemoteWorker(NewChannel(cluster_->address("ps", 0)), kPs,
                                    cluster_->address("ps", 0), deadlines);
  proto::RunGraphRequest request;
  request.set_graph_handle(RegisterConst(2.0f));
  request.set_incarnation(incarnation_);
  request.set_step_id(402);
  request.set_num_fetches(1);
  std::vector<Tensor> fetches;
  ASSERT_TRUE(worker->RunGraphWithTensors(&request, {}, &fetches).ok());

  ASSERT_TRUE(cluster_->Restart("ps", 0).ok());
  ps_ = cluster_->server("ps", 0);
  ASSERT_TRUE(waits->done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_FALSE(waits->status.ok());
  EXPECT_THAT(waits->status.message(), HasSubstr(cluster_->address("ps", 0)));
  stream->Close();

  // The worker's stream to the old ps is broken: at most one call fails on
  // it (naming the ps), and the next goes on a new stream.
  request.set_graph_handle(RegisterConst(4.0f));
  request.set_incarnation(incarnation_);
  request.set_step_id(403);
  absl::Status s = worker->RunGraphWithTensors(&request, {}, &fetches);
  if (!s.ok()) {
    EXPECT_THAT(s.message(), HasSubstr(cluster_->address("ps", 0))) << s;
    s = worker->RunGraphWithTensors(&request, {}, &fetches);
  }
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(fetches.at(0).scalar<float>(), 4.0f);
}

}  // namespace
}  // namespace distflow
