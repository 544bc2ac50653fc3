// Pushes as messages on a stream (push_stream.h), against a real ps server on
// loopback: each push's answer finds its caller, the tensor's bytes are not
// copied on the way out, the task's errors and a malformed message come back
// as statuses that name them, and a task that stops fails the pushes to it.
#include "distributed/rpc/push_stream.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "distributed/rpc/completion_queue_threads.h"
#include "distributed/rpc/grpc_remote_worker.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/tensor_wire.h"
#include "distributed/rpc/test_cluster.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

constexpr char kPs[] = "/job:ps/replica:0/task:0";
constexpr char kMethod[] = "/distflow.proto.WorkerService/PushTensorStream";

std::string Key(int i) {
  return absl::StrCat("/job:worker/replica:0/task:0/device:CPU:0;", kPs,
                      "/device:CPU:0;x", i, ":0");
}

class PushStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(*cluster);
    ps_ = cluster_->server("ps", 0)->worker();
    threads_ =
        std::make_unique<CompletionQueueThreads>("push_test", nullptr, 1);
    stub_ = std::make_unique<grpc::GenericStub>(
        NewChannel(cluster_->address("ps", 0)));
  }

  // A push stream to the ps, its events polled by this test's thread.
  std::shared_ptr<PushStreamClient> Connect() {
    return PushStreamClient::Open(
        [stub = stub_.get()](grpc::ClientContext* ctx,
                             grpc::CompletionQueue* cq) {
          return stub->PrepareCall(ctx, kMethod, cq);
        },
        threads_.get(), kPs, cluster_->address("ps", 0));
  }

  std::unique_ptr<TestCluster> cluster_;
  Worker* ps_ = nullptr;
  std::unique_ptr<CompletionQueueThreads> threads_;
  std::unique_ptr<grpc::GenericStub> stub_;
};

// Many pushes at once on one stream, each answered: the ps holds every
// tensor, for every step.
TEST_F(PushStreamTest, OverlappingPushesAreAllDeliveredAndAnswered) {
  constexpr int kPushes = 64;
  constexpr int64_t kElements = 1024;
  auto stream = Connect();
  absl::Mutex mu;
  int answered = 0;
  std::vector<absl::Status> failures;
  std::vector<proto::PushTensorResponse> responses(kPushes);
  for (int i = 0; i < kPushes; ++i) {
    Tensor value(DataType::kFloat, TensorShape({kElements}));
    std::vector<grpc::ByteBuffer> messages =
        EncodePushTensor(/*step_id=*/1000 + i, Key(i), value);
    ASSERT_EQ(messages.size(), 1u);
    ASSERT_TRUE(stream->Call(messages[0], &responses[i], absl::Seconds(30),
                             [&](const absl::Status& s) {
                               absl::MutexLock lock(&mu);
                               ++answered;
                               if (!s.ok()) failures.push_back(s);
                             }));
  }
  {
    absl::MutexLock lock(&mu);
    auto all = [&] { return answered == kPushes; };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(30)));
    EXPECT_TRUE(failures.empty()) << failures[0];
  }
  EXPECT_EQ(ps_->NumUnclaimedSteps(), kPushes);
  EXPECT_EQ(ps_->UnclaimedPushedBytes(), kPushes * kElements * 4);
  stream->Close();
}

// The message that goes on the stream carries the call's id and points at
// the tensor's own bytes.
TEST(PushCallsTest, TheCallMessageSharesTheTensorsBytes) {
  Tensor value(DataType::kFloat, TensorShape({4096}));
  std::vector<grpc::ByteBuffer> messages = EncodePushTensor(7, Key(0), value);
  ASSERT_EQ(messages.size(), 1u);
  grpc::ByteBuffer call = PushCalls::Call(/*id=*/42, messages[0]);

  proto::PushTensorHeader header;
  auto framed = ParseFramedMessage(call, &header, "test");
  ASSERT_TRUE(framed.ok()) << framed.status();
  EXPECT_EQ(header.call_id(), 42u);
  EXPECT_EQ(header.step_id(), 7);
  EXPECT_EQ(header.key(), Key(0));
  ASSERT_EQ(framed->slices.size(), 2u);
  EXPECT_EQ(framed->slices[1].begin(),
            static_cast<const uint8_t*>(value.raw_data()));
  EXPECT_EQ(framed->slices[1].size(), 4096u * 4);

  StreamCall<grpc::ByteBuffer> parsed;
  ASSERT_TRUE(PushCalls::ParseCall(&call, &parsed));
  EXPECT_EQ(parsed.id, 42u);
  EXPECT_FALSE(parsed.cancel);
}

// A push that the task refuses fails alone, with the task's status and
// message, and the stream goes on.
TEST_F(PushStreamTest, ARefusedPushFailsAloneWithTheTasksError) {
  auto stream = Connect();
  proto::PushTensorHeader bad;
  bad.set_step_id(5);
  bad.set_key(Key(1));
  bad.set_dtype(static_cast<proto::DataType>(999));
  grpc::Slice slice = FramedHeaderSlice(bad);
  grpc::ByteBuffer message(&slice, 1);
  proto::PushTensorResponse response;
  absl::Notification done;
  absl::Status status;
  ASSERT_TRUE(stream->Call(message, &response, absl::Seconds(30),
                           [&](const absl::Status& s) {
                             status = s;
                             done.Notify();
                           }));
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(Key(1)));

  // The next push on the same stream is delivered.
  Tensor value(DataType::kFloat, TensorShape({16}));
  absl::Notification next_done;
  absl::Status next;
  ASSERT_TRUE(stream->Call(EncodePushTensor(6, Key(2), value)[0], &response,
                           absl::Seconds(30), [&](const absl::Status& s) {
                             next = s;
                             next_done.Notify();
                           }));
  ASSERT_TRUE(next_done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(next.ok()) << next;
  EXPECT_EQ(ps_->NumUnclaimedSteps(), 1);
  stream->Close();
}

// A message that is not a PushTensor message ends the stream with an error
// that says so, not a crash of the task.
TEST_F(PushStreamTest, AMalformedMessageEndsTheStreamSayingWhy) {
  grpc::ClientContext ctx;
  grpc::CompletionQueue cq;
  auto next = [&cq] {
    void* tag = nullptr;
    bool ok = false;
    EXPECT_TRUE(cq.Next(&tag, &ok));
    return ok;
  };
  auto stream = stub_->PrepareCall(&ctx, kMethod, &cq);
  stream->StartCall(nullptr);
  ASSERT_TRUE(next());
  grpc::Slice garbage(std::string("\xff\xff\xff\x7f not a header"));
  stream->Write(grpc::ByteBuffer(&garbage, 1), nullptr);
  ASSERT_TRUE(next());
  grpc::ByteBuffer answer;
  stream->Read(&answer, nullptr);
  EXPECT_FALSE(next());  // no answer: the task ended the stream
  grpc::Status status;
  stream->Finish(&status, nullptr);
  ASSERT_TRUE(next());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("malformed message on the PushTensor stream"));
  cq.Shutdown();
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }

  // The task still takes pushes.
  auto good = Connect();
  Tensor value(DataType::kFloat, TensorShape({16}));
  proto::PushTensorResponse response;
  absl::Notification done;
  absl::Status pushed;
  ASSERT_TRUE(good->Call(EncodePushTensor(8, Key(3), value)[0], &response,
                         absl::Seconds(30), [&](const absl::Status& s) {
                           pushed = s;
                           done.Notify();
                         }));
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(pushed.ok()) << pushed;
  good->Close();
}

// Pushes through a worker's client to a ps that has stopped fail, naming the
// ps and its address; a restarted ps takes them again on a new stream.
TEST_F(PushStreamTest, PushesToAStoppedTaskFailNamingItThenReconnect) {
  RpcDeadlines deadlines;
  deadlines.step_ms = 10'000;
  const std::string address = cluster_->address("ps", 0);
  std::unique_ptr<WorkerInterface> to_ps =
      NewGrpcRemoteWorker(NewChannel(address), kPs, address, deadlines);
  auto push = [&](int64_t step) {
    Tensor value(DataType::kFloat, TensorShape({256}));
    absl::Notification done;
    absl::Status status;
    to_ps->PushTensorAsync(step, Key(4), value, [&](const absl::Status& s) {
      status = s;
      done.Notify();
    });
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    return status;
  };
  ASSERT_TRUE(push(1).ok());
  cluster_->Kill("ps", 0);
  absl::Status dead = push(2);
  EXPECT_FALSE(dead.ok());
  EXPECT_THAT(dead.message(), HasSubstr(address));
  EXPECT_THAT(dead.message(), HasSubstr("PushTensor"));

  ASSERT_TRUE(cluster_->Restart("ps", 0).ok());
  absl::Status back = absl::UnknownError("not tried");
  for (int attempt = 0; attempt < 100 && !back.ok(); ++attempt) {
    back = push(3 + attempt);
    if (!back.ok()) absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_TRUE(back.ok()) << back;
}

}  // namespace
}  // namespace distflow
