// Reassembly of tensors from pieces that may lie: ChunkAssembler (PushTensor
// chunks) and TensorStreamDecoder (RunStep stream pieces), alone and against
// a real master on 127.0.0.1.
#include "distributed/rpc/chunk_assembler.h"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/tensor_stream.h"
#include "distributed/rpc/test_cluster.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

TEST(ReceivedRangesTest, RefusesOverlapsAndMerges) {
  ReceivedRanges r;
  EXPECT_TRUE(r.Add(8, 8));
  EXPECT_FALSE(r.Add(8, 8));
  EXPECT_FALSE(r.Add(4, 5));
  EXPECT_FALSE(r.Add(15, 1));
  EXPECT_TRUE(r.Add(0, 8));
  EXPECT_TRUE(r.Add(16, 4));
  EXPECT_FALSE(r.Add(0, 20));
  EXPECT_EQ(r.bytes(), 20);
}

PushChunk FloatChunk(int64_t elements, int64_t offset, int64_t length) {
  PushChunk c;
  c.step_id = 3;
  c.key = "k";
  c.dtype = DataType::kFloat;
  c.shape = *TensorShape::FromDims({elements});
  c.total_bytes = elements * 4;
  c.offset = offset;
  c.length = length;
  return c;
}

TEST(ChunkAssemblerTest, AssemblesAndRefusesLies) {
  PushBudget budget(1 << 20, 1 << 20);
  auto now = std::chrono::steady_clock::time_point();
  ChunkAssembler::Options options;
  options.budget = &budget;
  options.timeout = absl::Seconds(10);
  options.clock = [&] { return now; };
  ChunkAssembler assembler(options);
  auto fill = [](char v) { return [v](char* to) { std::memset(to, v, 8); }; };
  auto first = assembler.Add(FloatChunk(4, 0, 8), "p", fill(1));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->IsInitialized());
  EXPECT_EQ(budget.HeldBy("p"), 16 + ChunkAssembler::kPartialOverheadBytes);
  // Another shape, a repeat, past the end: each refused naming the peer.
  for (const PushChunk& bad :
       {FloatChunk(1 << 16, (1 << 18) - 8, 8), FloatChunk(4, 0, 8),
        FloatChunk(4, 12, 8), FloatChunk(4, 0, 0)}) {
    auto s = assembler.Add(bad, "p", fill(9));
    EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << s.status();
    EXPECT_THAT(s.status().message(), HasSubstr("from peer p"));
  }
  // Another peer's chunks of the same key are its own tensor.
  EXPECT_TRUE(assembler.Add(FloatChunk(4, 0, 8), "q", fill(3)).ok());
  auto last = assembler.Add(FloatChunk(4, 8, 8), "p", fill(2));
  ASSERT_TRUE(last.ok()) << last.status();
  ASSERT_TRUE(last->IsInitialized());
  EXPECT_EQ(static_cast<const char*>(last->raw_data())[0], 1);
  EXPECT_EQ(static_cast<const char*>(last->raw_data())[15], 2);
  EXPECT_EQ(budget.HeldBy("p"), 0);
  // The other peer's half expires.
  EXPECT_EQ(assembler.NumPartial(), 1);
  now += std::chrono::seconds(11);
  assembler.ExpireOld();
  EXPECT_EQ(assembler.NumPartial(), 0);
  EXPECT_EQ(budget.Held(), 0);
  // Past the budget: refused before anything is allocated.
  auto big = assembler.Add(FloatChunk(1 << 20, 0, 8), "p", fill(1));
  EXPECT_TRUE(absl::IsResourceExhausted(big.status())) << big.status();
  EXPECT_THAT(big.status().message(), HasSubstr("peer p"));
}

// One message of a RunStep stream: the header, then `data` bytes.
grpc::ByteBuffer StreamMessage(const proto::RunStepStreamHeader& header,
                               size_t data) {
  std::string bytes = FramedHeader(header);
  bytes.append(data, '\1');
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

proto::RunStepStreamHeader Piece(int64_t elements, int64_t offset,
                                 int64_t length) {
  proto::RunStepStreamHeader header;
  proto::TensorPiece* piece = header.add_piece();
  piece->set_index(0);
  piece->set_dtype(proto::DT_FLOAT);
  piece->mutable_shape()->add_dim(elements);
  piece->set_offset(offset);
  piece->set_length(length);
  return header;
}

TEST(TensorStreamDecoderTest, RefusesWrappingAndRepeatedPieces) {
  proto::RunStepStreamHeader parsed;
  {
    // offset + length wrapped int64 and passed the bounds check.
    TensorStreamDecoder decoder("feed", {"x"});
    absl::Status s =
        decoder.Add(StreamMessage(Piece(4, INT64_MAX - 2, 8), 8), &parsed);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_THAT(s.message(), HasSubstr("feed 'x'"));
  }
  {
    // float32[2^62]: its byte size wrapped to 0.
    TensorStreamDecoder decoder("feed", {"x"});
    absl::Status s =
        decoder.Add(StreamMessage(Piece(int64_t{1} << 62, 0, 0), 0), &parsed);
    EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  }
  {
    // The same half twice made the tensor look whole.
    TensorStreamDecoder decoder("feed", {"x"});
    ASSERT_TRUE(decoder.Add(StreamMessage(Piece(4, 0, 8), 8), &parsed).ok());
    absl::Status s = decoder.Add(StreamMessage(Piece(4, 0, 8), 8), &parsed);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_FALSE(decoder.Complete());
  }
  {
    // A stream's declared tensors are bounded.
    TensorStreamDecoder decoder("feed", {"x"}, /*max_bytes=*/1024);
    absl::Status s = decoder.Add(StreamMessage(Piece(1024, 0, 8), 8), &parsed);
    EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  }
}

// The master refuses the same lies on its RunStep stream and keeps serving.
TEST(TensorStreamDecoderTest, MasterRefusesWrappingPieces) {
  auto cluster = TestCluster::Create({{"ps", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  grpc::GenericStub stub(NewChannel((*cluster)->address("ps", 0)));
  proto::RunStepStreamHeader header = Piece(4, INT64_MAX - 2, 8);
  header.mutable_step()->set_session_handle("none");
  header.mutable_step()->add_feed_name("x");
  for (int i = 0; i < 2; ++i) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(20));
    grpc::CompletionQueue cq;
    auto call = stub.PrepareCall(
        &ctx, "/distflow.proto.MasterStreamService/RunStepOneMessage", &cq);
    void* tag = nullptr;
    bool ok = false;
    call->StartCall(reinterpret_cast<void*>(1));
    ASSERT_TRUE(cq.Next(&tag, &ok));
    call->WriteLast(StreamMessage(header, 8), grpc::WriteOptions(),
                    reinterpret_cast<void*>(2));
    ASSERT_TRUE(cq.Next(&tag, &ok));
    grpc::Status status;
    call->Finish(&status, reinterpret_cast<void*>(3));
    while (cq.Next(&tag, &ok) && tag != reinterpret_cast<void*>(3)) {
    }
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr("feed 'x'"));
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
  }
}

}  // namespace
}  // namespace distflow
