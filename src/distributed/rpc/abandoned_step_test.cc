// A step whose client's call ends first (the client died, cancelled the call
// or passed its deadline) is aborted on every task: real servers on
// 127.0.0.1, clients that reach the worker's master over gRPC with a short
// deadline, and a dequeue that blocks until the step is aborted: on the ps
// (a step of two partitions) or on the master's own task (of one). Left
// running, that dequeue would take the next item enqueued, which no client
// would ever receive.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "distflow/distflow.h"
#include "distflow/ops/data_flow_ops.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/master_stream_client.h"
#include "distributed/rpc/test_cluster.h"
#include "distributed/worker.h"
#include "gtest/gtest.h"
#include "proto/master.grpc.pb.h"

namespace distflow {
namespace {

// Long enough for a healthy step on a loaded machine; far shorter than a
// step that waits on an empty queue.
constexpr int64_t kShortDeadlineMs = 300;
constexpr int64_t kStepDeadlineMs = 10'000;

// The parameter is the job of the task that holds the queue.
class AbandonedStepTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(*cluster);
    Scope root = Scope::NewRootScope();
    Scope holder =
        root.WithDevice(absl::StrCat("/job:", GetParam(), "/task:0"));
    Output queue = ops::FIFOQueue(holder.WithOpName("queue"), DataType::kFloat,
                                  PartialTensorShape({}));
    Output item = ops::Placeholder(root.WithOpName("item"), DataType::kFloat);
    ops::QueueEnqueue(holder.WithOpName("enqueue"), queue, item);
    ops::QueueDequeue(holder.WithOpName("dequeue"), queue);
    proto::GraphDef graph;
    ASSERT_EQ(root.ToGraphDef(&graph), absl::OkStatus());

    address_ = cluster_->address("worker", 0);
    stub_ = proto::MasterService::NewStub(NewChannel(address_));
    proto::CreateSessionRequest request;
    *request.mutable_graph() = graph;
    proto::CreateSessionResponse response;
    grpc::ClientContext ctx;
    grpc::Status s = stub_->CreateSession(&ctx, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    handle_ = response.session_handle();
  }

  // The worker of the task that holds the queue.
  Worker* Holder() { return cluster_->server(GetParam(), 0)->worker(); }

  // Waits up to 15 s for the queue's task to have no step under way;
  // whether it has none.
  bool HolderIdle() {
    for (int i = 0; i < 300 && Holder()->NumSteps() > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return Holder()->NumSteps() == 0;
  }

  // Enqueues `value` and dequeues one item in two steps on the stream, each
  // with a deadline a healthy step meets; the dequeued item.
  absl::StatusOr<float> EnqueueThenDequeue(float value) {
    MasterStreamClient client(NewChannel(address_), address_);
    auto enqueued =
        client.RunStep(handle_, {{"item:0", Tensor::Scalar<float>(value)}}, {},
                       {"enqueue"}, kStepDeadlineMs);
    if (!enqueued.ok()) return enqueued.status();
    auto dequeued =
        client.RunStep(handle_, {}, {"dequeue:0"}, {}, kStepDeadlineMs);
    if (!dequeued.ok()) return dequeued.status();
    return (*dequeued)[0].scalar<float>();
  }

  // After a call was abandoned mid-dequeue: its step is gone from the
  // queue's task, and the next item goes to the next client.
  void ExpectAbortedAndQueueServesTheNext(float value) {
    ASSERT_TRUE(HolderIdle()) << "the abandoned dequeue still runs";
    auto item = EnqueueThenDequeue(value);
    ASSERT_TRUE(item.ok()) << item.status();
    EXPECT_EQ(*item, value);
  }

  // A dequeue by the unary RunStep, in the call of `ctx`.
  grpc::Status UnaryDequeue(grpc::ClientContext* ctx) {
    proto::RunStepRequest request;
    request.set_session_handle(handle_);
    request.add_fetch("dequeue:0");
    proto::RunStepResponse response;
    return stub_->RunStep(ctx, request, &response);
  }

  std::unique_ptr<TestCluster> cluster_;
  std::string address_;
  std::unique_ptr<proto::MasterService::Stub> stub_;
  std::string handle_;
};

TEST_P(AbandonedStepTest, StepOfACallPastItsDeadlineIsAbortedOnTheStream) {
  MasterStreamClient client(NewChannel(address_), address_);
  auto blocked =
      client.RunStep(handle_, {}, {"dequeue:0"}, {}, kShortDeadlineMs);
  ASSERT_TRUE(absl::IsDeadlineExceeded(blocked.status())) << blocked.status();
  ExpectAbortedAndQueueServesTheNext(5.0f);
}

TEST_P(AbandonedStepTest, StepOfAUnaryCallPastItsDeadlineIsAborted) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(kShortDeadlineMs));
  grpc::Status s = UnaryDequeue(&ctx);
  ASSERT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
      << s.error_message();
  ExpectAbortedAndQueueServesTheNext(6.0f);
}

// A client that cancels its call (as a dying process's connection does)
// rather than letting it time out.
TEST_P(AbandonedStepTest, StepOfACancelledCallIsAborted) {
  grpc::ClientContext ctx;
  std::thread canceller([&] {
    // Until the step runs on the queue's task: its dequeue then waits.
    for (int i = 0; i < 200 && Holder()->NumSteps() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ctx.TryCancel();
  });
  grpc::Status s = UnaryDequeue(&ctx);
  canceller.join();
  ASSERT_EQ(s.error_code(), grpc::StatusCode::CANCELLED) << s.error_message();
  ExpectAbortedAndQueueServesTheNext(7.0f);
}

// A step that ends in time is not disturbed by its call's end: the same
// session runs on, step after step.
TEST_P(AbandonedStepTest, FinishedStepsAreNotCancelled) {
  for (int i = 0; i < 20; ++i) {
    auto item = EnqueueThenDequeue(static_cast<float>(i));
    ASSERT_TRUE(item.ok()) << item.status();
    EXPECT_EQ(*item, static_cast<float>(i));
  }
  EXPECT_TRUE(HolderIdle());
}

INSTANTIATE_TEST_SUITE_P(QueueOnEitherTask, AbandonedStepTest,
                         ::testing::Values("ps", "worker"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace distflow
