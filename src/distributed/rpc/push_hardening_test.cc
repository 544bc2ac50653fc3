// A real task on 127.0.0.1 takes hostile or broken PushTensor and RunGraph
// calls: each fails with an error naming the culprit, holds nothing past its
// budget or its time, and the task goes on serving.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "distflow/distflow.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/tensor_wire.h"
#include "distributed/rpc/test_cluster.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "proto/worker.pb.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

constexpr char kPushMethod[] = "/distflow.proto.WorkerService/PushTensor";
constexpr char kRunGraphMethod[] = "/distflow.proto.WorkerService/RunGraph";
constexpr char kKey[] =
    "/job:worker/replica:0/task:0/device:CPU:0;"
    "/job:ps/replica:0/task:0/device:CPU:0;x:0";

// A PushTensor message: header then `data_len` bytes of 7s.
grpc::ByteBuffer Chunk(int64_t step, const std::vector<int64_t>& dims,
                       int64_t total, int64_t offset, size_t data_len) {
  proto::PushTensorHeader header;
  header.set_step_id(step);
  header.set_key(kKey);
  header.set_dtype(proto::DT_FLOAT);
  for (int64_t d : dims) header.mutable_shape()->add_dim(d);
  header.set_total_bytes(total);
  header.set_offset(offset);
  std::string bytes = FramedHeader(header);
  bytes.append(data_len, '\7');
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

class PushHardeningTest : public ::testing::Test {
 protected:
  void Start(ServerOptions options) {
    // Every push below comes over gRPC from this test's own channel.
    options.local_socket = false;
    auto cluster = TestCluster::Create({{"ps", 1}}, options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(*cluster);
    stub_ = std::make_unique<grpc::GenericStub>(
        NewChannel(cluster_->address("ps", 0)));
  }

  // One unary call of `method` with `request` as its raw message.
  grpc::Status Call(const char* method, const grpc::ByteBuffer& request) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(20));
    grpc::CompletionQueue cq;
    auto call = stub_->PrepareUnaryCall(&ctx, method, request, &cq);
    call->StartCall();
    grpc::ByteBuffer response;
    grpc::Status status;
    call->Finish(&response, &status, reinterpret_cast<void*>(1));
    void* tag = nullptr;
    bool ok = false;
    EXPECT_TRUE(cq.Next(&tag, &ok));
    return status;
  }
  grpc::Status Push(const grpc::ByteBuffer& message) {
    return Call(kPushMethod, message);
  }

  Worker* ps() { return cluster_->server("ps", 0)->worker(); }

  // The task still serves: a whole small tensor is taken.
  void ExpectAlive() {
    grpc::Status s = Push(Chunk(999, {2}, 8, 0, 8));
    EXPECT_TRUE(s.ok()) << s.error_message();
  }

  std::unique_ptr<TestCluster> cluster_;
  std::unique_ptr<grpc::GenericStub> stub_;
};

// A second chunk that declares a larger tensor than the first and an offset
// far past the first's buffer is refused (it was copied past the buffer).
TEST_F(PushHardeningTest, ChunkOfAnotherShapeIsRefused) {
  Start({});
  ASSERT_TRUE(Push(Chunk(1, {4}, 16, 0, 8)).ok());
  grpc::Status s =
      Push(Chunk(1, {1 << 20}, int64_t{4} << 20, (int64_t{4} << 20) - 8, 8));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("x:0"));
  EXPECT_THAT(s.error_message(), HasSubstr("step 1"));
  EXPECT_THAT(s.error_message(), HasSubstr("127.0.0.1"));
  EXPECT_EQ(ps()->NumUnclaimedSteps(), 0);
  ExpectAlive();
}

// A chunk sent twice is refused, and the tensor is not delivered with bytes
// that never came.
TEST_F(PushHardeningTest, RepeatedChunkIsRefused) {
  Start({});
  ASSERT_TRUE(Push(Chunk(2, {4}, 16, 0, 8)).ok());
  grpc::Status s = Push(Chunk(2, {4}, 16, 0, 8));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("repeat"));
  EXPECT_THAT(s.error_message(), HasSubstr("step 2"));
  EXPECT_THAT(s.error_message(), HasSubstr("127.0.0.1"));
  // Overlapping the first chunk is the same.
  s = Push(Chunk(2, {4}, 16, 4, 8));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ps()->NumUnclaimedSteps(), 0);  // nothing was delivered
  // The missing half completes it.
  ASSERT_TRUE(Push(Chunk(2, {4}, 16, 8, 8)).ok());
  EXPECT_EQ(ps()->NumUnclaimedSteps(), 1);
}

// Sizes that wrap or pass the limit of one tensor are refused before
// anything is allocated.
TEST_F(PushHardeningTest, HugeDeclaredSizesAreRefused) {
  Start({});
  // float32[2^62]: 2^64 bytes, which wrapped to 0.
  grpc::Status s = Push(Chunk(3, {int64_t{1} << 62}, 0, 0, 0));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("x:0"));
  // float32[2^35]: 128 GiB, more than any tensor may have.
  s = Push(Chunk(3, {int64_t{1} << 35}, int64_t{1} << 37, 0, 8));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("x:0"));
  // An offset near int64's end, which wrapped the bounds check.
  s = Push(Chunk(3, {4}, 16, INT64_MAX - 2, 8));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  s = Push(Chunk(3, {4}, 16, -8, 8));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  ExpectAlive();
}

// Partial tensors count against their peer's budget, and go when their
// other chunks do not come in time.
TEST_F(PushHardeningTest, PartialTensorsAreBoundedAndExpire) {
  ServerOptions options;
  options.max_pending_push_bytes_per_peer = 1 << 20;
  options.pending_push_timeout_ms = 400;
  Start(options);
  // 4 MiB declared by one small chunk: past the peer's 1 MiB.
  grpc::Status s = Push(Chunk(4, {1 << 20}, int64_t{4} << 20, 0, 8));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("127.0.0.1"));
  EXPECT_THAT(s.error_message(), HasSubstr("max_pending_push_bytes_per_peer"));
  EXPECT_EQ(ps()->push_budget()->Held(), 0);

  ASSERT_TRUE(Push(Chunk(5, {1024}, 4096, 0, 1024)).ok());
  EXPECT_GT(ps()->push_budget()->Held(), 4096);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  // The next push looks for old partial tensors first.
  ASSERT_TRUE(Push(Chunk(6, {1024}, 4096, 0, 1024)).ok());
  EXPECT_LT(ps()->push_budget()->Held(), 2 * 4096);
  // The rest of the dropped tensor starts a new one, which stays partial.
  ASSERT_TRUE(Push(Chunk(5, {1024}, 4096, 1024, 3072)).ok());
  EXPECT_EQ(ps()->NumUnclaimedSteps(), 0);
}

// Whole tensors pushed for steps that have not started here count against
// their peer's budget until a step takes them.
TEST_F(PushHardeningTest, UnclaimedTensorsAreBounded) {
  ServerOptions options;
  options.max_pending_push_bytes_per_peer = 3 << 20;
  Start(options);
  ASSERT_TRUE(Push(Chunk(7, {1 << 19}, int64_t{2} << 20, 0, 2 << 20)).ok());
  EXPECT_EQ(ps()->push_budget()->Held(), int64_t{2} << 20);
  grpc::Status s = Push(Chunk(8, {1 << 19}, int64_t{2} << 20, 0, 2 << 20));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("127.0.0.1"));
  EXPECT_THAT(s.error_message(), HasSubstr("step 8"));
  // Aborting the first step gives its bytes back.
  proto::AbortStepRequest abort;
  abort.set_step_id(7);
  proto::AbortStepResponse aborted;
  ASSERT_TRUE(CallAndWait([&](StatusCallback done) {
                ps()->AbortStepAsync(&abort, &aborted, std::move(done));
              }).ok());
  EXPECT_EQ(ps()->push_budget()->Held(), 0);
  EXPECT_TRUE(Push(Chunk(8, {1 << 19}, int64_t{2} << 20, 0, 2 << 20)).ok());
}

// A RunGraph with a negative fetch count fails (it threw length_error, and
// the task ended).
TEST_F(PushHardeningTest, NegativeFetchCountIsRefused) {
  Start({});
  proto::RegisterGraphRequest reg;
  proto::NodeDef* node = reg.mutable_graph()->add_node();
  node->set_name("c");
  node->set_op("Const");
  (*node->mutable_attr())["dtype"].set_type(proto::DT_FLOAT);
  proto::TensorProto* value = (*node->mutable_attr())["value"].mutable_tensor();
  value->set_dtype(proto::DT_FLOAT);
  value->set_tensor_content(std::string(4, '\0'));
  proto::RegisterGraphResponse registered;
  ASSERT_TRUE(CallAndWait([&](StatusCallback done) {
                ps()->RegisterGraphAsync(&reg, &registered, std::move(done));
              }).ok());
  proto::RunGraphRequest run;
  run.set_graph_handle(registered.graph_handle());
  run.set_step_id(11);
  run.set_num_fetches(-1);
  grpc::Status s = Call(kRunGraphMethod, ProtoToByteBuffer(run));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("-1 fetches"));
  run.set_num_fetches(0);
  run.set_step_id(12);
  s = Call(kRunGraphMethod, ProtoToByteBuffer(run));
  EXPECT_TRUE(s.ok()) << s.error_message();
}

// A message past the task's limit is refused, and the task lives.
TEST_F(PushHardeningTest, OversizedMessageIsRefused) {
  ServerOptions options;
  options.max_message_bytes = 8 << 20;
  Start(options);
  grpc::Status s =
      Push(Chunk(9, {3 << 20}, int64_t{12} << 20, 0, size_t{12} << 20));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  ExpectAlive();
}

}  // namespace
}  // namespace distflow
