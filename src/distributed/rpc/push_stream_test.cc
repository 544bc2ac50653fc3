// Pushes as messages on a stream (push_stream.h): against a real ps server on
// loopback, every push is delivered, the tensor's bytes are not copied on the
// way out, the task's errors and a malformed message come back as statuses
// that name them, and a task that stops fails the pushes to it; against a
// task that answers when the test says, answers find their callers, a push
// past its deadline fails alone while what the task may read stays alive, a
// worker's client can be destroyed with pushes in flight, a task without
// the stream gets unary pushes, and one whose data port cannot be reached
// gets large pushes over gRPC.
#include "distributed/rpc/push_stream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "core/tensor_coding.h"
#include "distributed/rpc/completion_queue_threads.h"
#include "distributed/rpc/grpc_remote_worker.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/local_socket.h"
#include "distributed/rpc/server_unary_call.h"
#include "distributed/rpc/tensor_wire.h"
#include "distributed/rpc/test_cluster.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "proto/worker.grpc.pb.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

constexpr char kPs[] = "/job:ps/replica:0/task:0";
constexpr char kMethod[] = "/distflow.proto.WorkerService/PushTensorStream";

std::string Key(int i) {
  return absl::StrCat("/job:worker/replica:0/task:0/device:CPU:0;", kPs,
                      "/device:CPU:0;x", i, ":0");
}

class PushStreamTest : public PsAndWorkerTest {
 protected:
  void SetUp() override {
    PsAndWorkerTest::SetUp();
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

  Worker* ps_ = nullptr;
  std::unique_ptr<CompletionQueueThreads> threads_;
  std::unique_ptr<grpc::GenericStub> stub_;
};

// What a push's callback saw; shared with the callback, which may outlive a
// test that failed early.
struct Outcome {
  absl::Notification done;
  absl::Status status;
  proto::PushTensorResponse response;
  PushStreamClient::Done Callback(const std::shared_ptr<Outcome>& self) {
    return [self](const absl::Status& s) {
      self->status = s;
      self->done.Notify();
    };
  }
};

// A message whose dtype no task knows: refused with INVALID_ARGUMENT.
grpc::ByteBuffer BadPush(int64_t step, const std::string& key) {
  proto::PushTensorHeader bad;
  bad.set_step_id(step);
  bad.set_key(key);
  bad.set_dtype(static_cast<proto::DataType>(999));
  grpc::Slice slice = FramedHeaderSlice(bad);
  return grpc::ByteBuffer(&slice, 1);
}

// Many pushes at once on one stream, every other one refused: each caller
// gets its own push's status, and the ps holds every good tensor.
TEST_F(PushStreamTest, OverlappingPushesEachGetTheirOwnAnswer) {
  constexpr int kPushes = 64;
  constexpr int64_t kElements = 1024;
  auto stream = Connect();
  std::vector<std::shared_ptr<Outcome>> outcomes;
  for (int i = 0; i < kPushes; ++i) {
    auto outcome = std::make_shared<Outcome>();
    outcomes.push_back(outcome);
    Tensor value(DataType::kFloat, TensorShape({kElements}));
    const grpc::ByteBuffer message =
        i % 2 == 0 ? EncodePushTensor(/*step_id=*/1000 + i, Key(i), value)[0]
                   : BadPush(1000 + i, Key(i));
    ASSERT_TRUE(stream->Call(message, &outcome->response, absl::Seconds(30),
                             outcome->Callback(outcome)));
  }
  for (int i = 0; i < kPushes; ++i) {
    ASSERT_TRUE(
        outcomes[i]->done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    if (i % 2 == 0) {
      EXPECT_TRUE(outcomes[i]->status.ok()) << i << ": " << outcomes[i]->status;
    } else {
      EXPECT_TRUE(absl::IsInvalidArgument(outcomes[i]->status))
          << i << ": " << outcomes[i]->status;
      EXPECT_THAT(outcomes[i]->status.message(), HasSubstr(Key(i)));
    }
  }
  EXPECT_EQ(ps_->NumUnclaimedSteps(), kPushes / 2);
  EXPECT_EQ(ps_->UnclaimedPushedBytes(), kPushes / 2 * kElements * 4);
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
  auto refused = std::make_shared<Outcome>();
  ASSERT_TRUE(stream->Call(BadPush(5, Key(1)), &refused->response,
                           absl::Seconds(30), refused->Callback(refused)));
  ASSERT_TRUE(refused->done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(absl::IsInvalidArgument(refused->status)) << refused->status;
  EXPECT_THAT(refused->status.message(), HasSubstr(Key(1)));
  EXPECT_THAT(refused->status.message(), HasSubstr("999"));

  // The next push on the same stream is delivered.
  Tensor value(DataType::kFloat, TensorShape({16}));
  auto next = std::make_shared<Outcome>();
  ASSERT_TRUE(stream->Call(EncodePushTensor(6, Key(2), value)[0],
                           &next->response, absl::Seconds(30),
                           next->Callback(next)));
  ASSERT_TRUE(next->done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(next->status.ok()) << next->status;
  EXPECT_EQ(ps_->NumUnclaimedSteps(), 1);
  stream->Close();
}

// A message that is not a PushTensor message ends the stream with an error
// that says so, not a crash of the task.
TEST_F(PushStreamTest, AMalformedMessageEndsTheStreamSayingWhy) {
  grpc::ClientContext ctx;
  grpc::CompletionQueue cq;
  // Each operation below is waited for before the next starts (expectations,
  // not assertions: the queue is drained at the end whatever happens).
  auto next = [&cq] {
    void* tag = nullptr;
    bool ok = false;
    EXPECT_TRUE(cq.Next(&tag, &ok));
    return ok;
  };
  auto stream = stub_->PrepareCall(&ctx, kMethod, &cq);
  stream->StartCall(nullptr);
  EXPECT_TRUE(next());
  grpc::Slice garbage(std::string("\xff\xff\xff\x7f not a header"));
  stream->Write(grpc::ByteBuffer(&garbage, 1), nullptr);
  EXPECT_TRUE(next());
  grpc::ByteBuffer answer;
  stream->Read(&answer, nullptr);
  EXPECT_FALSE(next());  // no answer: the task ended the stream
  grpc::Status status;
  stream->Finish(&status, nullptr);
  EXPECT_TRUE(next());
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
  auto pushed = std::make_shared<Outcome>();
  ASSERT_TRUE(good->Call(EncodePushTensor(8, Key(3), value)[0],
                         &pushed->response, absl::Seconds(30),
                         pushed->Callback(pushed)));
  ASSERT_TRUE(pushed->done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(pushed->status.ok()) << pushed->status;
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
    auto outcome = std::make_shared<Outcome>();
    to_ps->PushTensorAsync(step, Key(4), value, outcome->Callback(outcome));
    EXPECT_TRUE(
        outcome->done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    return outcome->status;
  };
  ASSERT_TRUE(push(1).ok());
  cluster_->Kill("ps", 0);
  absl::Status dead = push(2);
  EXPECT_FALSE(dead.ok());
  EXPECT_THAT(dead.message(), HasSubstr(address));
  EXPECT_THAT(dead.message(), HasSubstr("PushTensor"));

  ASSERT_TRUE(cluster_->Restart("ps", 0).ok());
  // The channel to the new ps may wait out a reconnect backoff first.
  const absl::Time deadline = absl::Now() + absl::Seconds(15);
  absl::Status back = absl::UnknownError("not tried");
  for (int attempt = 0; !back.ok() && absl::Now() < deadline; ++attempt) {
    back = push(3 + attempt);
    if (!back.ok()) absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_TRUE(back.ok()) << back;
}

// A task that serves only pushes: on the stream, holding each until the test
// answers it; or, as an older version would, without the streams: unary
// pushes, answered at once, and unary RunGraph calls, each answered with one
// fetch, the number of RunGraph calls it has had.
class PushTask {
 public:
  explicit PushTask(bool with_stream) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    if (with_stream) {
      auto service = std::make_unique<StreamService>();
      stream_.request = [s = service.get()](grpc::ServerContext* ctx,
                                            PushStreamMethod::Stream* stream,
                                            grpc::ServerCompletionQueue* cq,
                                            void* tag) {
        s->RequestPushTensorStream(ctx, stream, cq, cq, tag);
      };
      service_ = std::move(service);
    } else {
      auto service = std::make_unique<UnaryService>();
      SetRequestFunction(&unary_, service.get(),
                         &UnaryService::RequestPushTensor);
      SetRequestFunction(&run_graph_, service.get(),
                         &UnaryService::RequestRunGraph);
      service_ = std::move(service);
    }
    stream_.handle = [this](const grpc::ByteBuffer* request,
                            proto::PushTensorResponse* response,
                            StatusCallback done) {
      proto::PushTensorHeader header;
      EXPECT_TRUE(ParseFramedMessage(*request, &header, "test").ok());
      absl::MutexLock lock(&mu_);
      held_.push_back({header.step_id(), response, std::move(done)});
    };
    unary_.handle = [this](const grpc::ByteBuffer*, grpc::ByteBuffer* response,
                           std::function<void(const grpc::Status&)> finish) {
      ++unary_pushes_;
      proto::PushTensorResponse answer;
      if (offer_port_ != 0) {
        answer.mutable_data_connection()->set_port(offer_port_);
        answer.mutable_data_connection()->set_token(7);
      }
      *response = ProtoToByteBuffer(answer);
      finish(grpc::Status::OK);
    };
    run_graph_.handle =
        [this](const proto::RunGraphRequest*, proto::RunGraphResponse* response,
               std::function<void(const grpc::Status&)> finish) {
          Tensor count = Tensor::Scalar<int32_t>(++run_graphs_);
          TensorToProto(count, response->add_fetch());
          finish(grpc::Status::OK);
        };
    builder.RegisterService(service_.get());
    cq_ = builder.AddCompletionQueue();
    server_ = builder.BuildAndStart();
    threads_ =
        std::make_unique<CompletionQueueThreads>("push_task", cq_.get(), 1);
    if (with_stream) {
      AwaitCallStreams(&stream_, cq_.get(), threads_.get());
    } else {
      ServerUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>::Await(
          &unary_, cq_.get(), threads_.get());
      ServerUnaryCall<proto::RunGraphRequest, proto::RunGraphResponse>::Await(
          &run_graph_, cq_.get(), threads_.get());
    }
  }
  ~PushTask() {
    AnswerAll([](int64_t) { return std::string(); });
    threads_->Close();
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::seconds(2));
    threads_->Shutdown();
  }

  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  // Unary pushes are answered with an offer of a data connection on `port`.
  void OfferDataPort(int port) { offer_port_ = port; }
  int unary_pushes() const { return unary_pushes_; }
  int run_graphs() const { return run_graphs_; }

  // Waits until `n` pushes are held.
  bool WaitForHeld(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return held_.size() >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(30));
  }
  // Answers every held push, last first, each with `text(step)` in its
  // response.
  void AnswerAll(const std::function<std::string(int64_t step)>& text) {
    std::vector<Held> held;
    {
      absl::MutexLock lock(&mu_);
      held.swap(held_);
    }
    std::reverse(held.begin(), held.end());
    for (Held& push : held) {
      push.response->set_same_host_refused(text(push.step));
      push.done(absl::OkStatus());
    }
  }

 private:
  using StreamService = proto::WorkerService::WithRawMethod_PushTensorStream<
      proto::WorkerService::Service>;
  using UnaryService = proto::WorkerService::WithRawMethod_PushTensor<
      proto::WorkerService::WithAsyncMethod_RunGraph<
          proto::WorkerService::Service>>;
  struct Held {
    int64_t step;
    proto::PushTensorResponse* response;
    StatusCallback done;
  };

  int port_ = 0;
  std::unique_ptr<grpc::Service> service_;
  PushStreamMethod stream_;
  UnaryMethod<grpc::ByteBuffer, grpc::ByteBuffer> unary_;
  UnaryMethod<proto::RunGraphRequest, proto::RunGraphResponse> run_graph_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<CompletionQueueThreads> threads_;
  std::atomic<int> unary_pushes_{0};
  std::atomic<int> offer_port_{0};
  std::atomic<int> run_graphs_{0};
  absl::Mutex mu_;
  std::vector<Held> held_ ABSL_GUARDED_BY(mu_);
};

class HeldPushTest : public ::testing::Test {
 protected:
  HeldPushTest()
      : threads_(
            std::make_unique<CompletionQueueThreads>("push_test", nullptr, 1)),
        stub_(NewChannel(task_.address())) {}

  std::shared_ptr<PushStreamClient> Connect() {
    return PushStreamClient::Open(
        [this](grpc::ClientContext* ctx, grpc::CompletionQueue* cq) {
          return stub_.PrepareCall(ctx, kMethod, cq);
        },
        threads_.get(), kPs, task_.address());
  }
  static grpc::ByteBuffer Message(int64_t step) {
    Tensor value(DataType::kFloat, TensorShape({8}));
    return EncodePushTensor(step, Key(0), value)[0];
  }

  PushTask task_{/*with_stream=*/true};
  std::unique_ptr<CompletionQueueThreads> threads_;
  grpc::GenericStub stub_;
};

// Answers that come in another order than the pushes still reach the
// pushes they answer.
TEST_F(HeldPushTest, AnswersOutOfOrderReachTheirOwnCallers) {
  constexpr int kPushes = 10;
  auto stream = Connect();
  std::vector<std::shared_ptr<Outcome>> outcomes;
  for (int step = 0; step < kPushes; ++step) {
    auto outcome = std::make_shared<Outcome>();
    outcomes.push_back(outcome);
    ASSERT_TRUE(stream->Call(Message(step), &outcome->response,
                             absl::Seconds(30), outcome->Callback(outcome)));
  }
  ASSERT_TRUE(task_.WaitForHeld(kPushes));
  task_.AnswerAll([](int64_t step) { return absl::StrCat("step ", step); });
  for (int step = 0; step < kPushes; ++step) {
    ASSERT_TRUE(
        outcomes[step]->done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    EXPECT_TRUE(outcomes[step]->status.ok()) << outcomes[step]->status;
    EXPECT_EQ(outcomes[step]->response.same_host_refused(),
              absl::StrCat("step ", step));
  }
  stream->Close();
}

// A push that is not answered by its deadline fails alone, naming the task;
// what the task may still read of it stays alive until the task answers.
TEST_F(HeldPushTest, APushPastItsDeadlineFailsButKeepsItsTensorUntilAnswered) {
  auto stream = Connect();
  auto tensor = std::make_shared<int>(7);
  std::weak_ptr<int> watch = tensor;
  auto late = std::make_shared<Outcome>();
  auto on_time = std::make_shared<Outcome>();
  ASSERT_TRUE(stream->Call(Message(1), &late->response, absl::Milliseconds(200),
                           late->Callback(late), std::move(tensor)));
  ASSERT_TRUE(stream->Call(Message(2), &on_time->response, absl::Seconds(30),
                           on_time->Callback(on_time)));
  ASSERT_TRUE(late->done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(absl::IsDeadlineExceeded(late->status)) << late->status;
  EXPECT_THAT(late->status.message(), HasSubstr(task_.address()));
  EXPECT_THAT(late->status.message(), HasSubstr("PushTensor"));
  EXPECT_FALSE(on_time->done.HasBeenNotified());
  EXPECT_FALSE(watch.expired());

  ASSERT_TRUE(task_.WaitForHeld(2));
  task_.AnswerAll([](int64_t) { return std::string(); });
  ASSERT_TRUE(on_time->done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(on_time->status.ok()) << on_time->status;
  // Then the late push's answer comes, and the tensor goes.
  for (int i = 0; i < 1000 && !watch.expired(); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(watch.expired());
  stream->Close();
}

// A worker's client destroyed while its pushes wait for answers fails them,
// and its destructor returns once their callbacks have.
TEST_F(HeldPushTest, AClientDestroyedWithPushesInFlightFailsThem) {
  auto to_task =
      NewGrpcRemoteWorker(NewChannel(task_.address()), kPs, task_.address());
  std::vector<std::shared_ptr<Outcome>> outcomes;
  for (int step = 0; step < 3; ++step) {
    auto outcome = std::make_shared<Outcome>();
    outcomes.push_back(outcome);
    Tensor value(DataType::kFloat, TensorShape({8}));
    to_task->PushTensorAsync(step, Key(0), value, outcome->Callback(outcome));
  }
  ASSERT_TRUE(task_.WaitForHeld(3));
  to_task.reset();
  for (const auto& outcome : outcomes) {
    ASSERT_TRUE(outcome->done.HasBeenNotified());
    EXPECT_TRUE(absl::IsCancelled(outcome->status)) << outcome->status;
    EXPECT_THAT(outcome->status.message(), HasSubstr(task_.address()));
  }
}

// A task without the push stream (an older version) gets every push as a
// unary call.
TEST(TaskWithoutStreamsTest, ATaskWithoutTheStreamGetsUnaryPushes) {
  PushTask task(/*with_stream=*/false);
  auto to_task =
      NewGrpcRemoteWorker(NewChannel(task.address()), kPs, task.address());
  for (int step = 0; step < 3; ++step) {
    auto outcome = std::make_shared<Outcome>();
    Tensor value(DataType::kFloat, TensorShape({8}));
    to_task->PushTensorAsync(step, Key(0), value, outcome->Callback(outcome));
    ASSERT_TRUE(
        outcome->done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    EXPECT_TRUE(outcome->status.ok()) << outcome->status;
  }
  EXPECT_EQ(task.unary_pushes(), 3);
}

// A task whose data port cannot be reached (a firewall that lets only its
// gRPC port through) gets every large push over gRPC, each once.
TEST(DataPortTest, AnUnreachableDataPortLeavesPushesOnGrpc) {
  PushTask task(/*with_stream=*/false);
  // Held by a socket that does not listen: connections are refused.
  auto reserved = PortReservation::Create("127.0.0.1");
  ASSERT_TRUE(reserved.ok()) << reserved.status();
  task.OfferDataPort((*reserved)->port());
  PushPaths between_hosts;
  between_hosts.same_host = false;
  auto to_task =
      NewGrpcRemoteWorker(NewChannel(task.address()), kPs, task.address(),
                          RpcDeadlines(), between_hosts);
  for (int step = 0; step < 5; ++step) {
    auto outcome = std::make_shared<Outcome>();
    Tensor value(DataType::kFloat, TensorShape({int64_t{1} << 18}));  // 1 MiB
    to_task->PushTensorAsync(step, Key(0), value, outcome->Callback(outcome));
    ASSERT_TRUE(
        outcome->done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    EXPECT_TRUE(outcome->status.ok()) << outcome->status;
    // (Time for the attempt to connect to fail.)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(task.unary_pushes(), 5);
}

// So does a task without the RunGraph stream get RunGraph calls, the
// asynchronous ones and the blocking one, each run once.
TEST(TaskWithoutStreamsTest, ATaskWithoutTheStreamGetsUnaryRunGraphs) {
  PushTask task(/*with_stream=*/false);
  auto to_task =
      NewGrpcRemoteWorker(NewChannel(task.address()), kPs, task.address());
  proto::RunGraphRequest request;
  request.set_graph_handle("g");
  request.set_step_id(1);
  request.set_num_fetches(1);
  for (int32_t call = 1; call <= 2; ++call) {
    proto::RunGraphResponse response;
    auto outcome = std::make_shared<Outcome>();
    to_task->RunGraphAsync(&request, &response, outcome->Callback(outcome));
    ASSERT_TRUE(
        outcome->done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    ASSERT_TRUE(outcome->status.ok()) << outcome->status;
    ASSERT_EQ(response.fetch_size(), 1);
    auto count = TensorFromProto(response.fetch(0));
    ASSERT_TRUE(count.ok());
    EXPECT_EQ(count->scalar<int32_t>(), call);
  }
  std::vector<Tensor> fetches;
  ASSERT_TRUE(to_task->RunGraphWithTensors(&request, {}, &fetches).ok());
  ASSERT_EQ(fetches.size(), 1u);
  EXPECT_EQ(fetches[0].scalar<int32_t>(), 3);
  EXPECT_EQ(task.run_graphs(), 3);
}

}  // namespace
}  // namespace distflow
