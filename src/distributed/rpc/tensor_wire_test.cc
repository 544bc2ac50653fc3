#include "distributed/rpc/tensor_wire.h"

#include "gtest/gtest.h"

namespace distflow {
namespace {

TEST(TensorWireTest, OneMessageRoundTripsAndSharesTheSendersBuffer) {
  Tensor value = Tensor::Matrix<float>({{1, 2, 3}, {4, 5, 6}});
  auto messages = EncodePushTensor(42, "a;b;x:0", value);
  ASSERT_EQ(messages.size(), 1u);
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(messages[0].Dump(&slices).ok());
  ASSERT_EQ(slices.size(), 2u);
  // The data slice points into the tensor: no copy on the sending side.
  EXPECT_EQ(static_cast<const void*>(slices[1].begin()), value.raw_data());
  PushAssembler assembler;
  auto out = assembler.Add(messages[0]);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->step_id, 42);
  EXPECT_EQ(out->key, "a;b;x:0");
  EXPECT_TRUE(out->value.Equals(value));
}

TEST(TensorWireTest, ChunksReassembleInAnyOrder) {
  std::vector<int32_t> data(1000);
  for (int i = 0; i < 1000; ++i) data[i] = i * 7;
  Tensor value = Tensor::Vector<int32_t>(data);
  auto messages = EncodePushTensor(1, "k", value, /*chunk_bytes=*/300);
  ASSERT_EQ(messages.size(), 14u);  // ceil(4000 / 300)
  PushAssembler assembler;
  Tensor result;
  for (int i = static_cast<int>(messages.size()) - 1; i >= 0; --i) {
    auto out = assembler.Add(messages[i]);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->value.IsInitialized(), i == 0);
    if (i == 0) result = out->value;
  }
  EXPECT_TRUE(result.Equals(value));
}

TEST(TensorWireTest, StringTensorsAndEmptyTensorsTravel) {
  Tensor strings = Tensor::Vector<std::string>({"a", "bc"});
  PushAssembler assembler;
  auto out = assembler.Add(EncodePushTensor(1, "s", strings)[0]);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->value.Equals(strings));
  Tensor empty(DataType::kFloat, TensorShape({0, 3}));
  out = assembler.Add(EncodePushTensor(1, "e", empty)[0]);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->value.Equals(empty));
}

TEST(TensorWireTest, MalformedMessageIsInvalidArgument) {
  grpc::Slice junk(std::string("\x05\x00\x00\x00zz", 6));
  grpc::ByteBuffer message(&junk, 1);
  PushAssembler assembler;
  EXPECT_EQ(assembler.Add(message).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TensorWireTest, ReceiveBuffersAreReusedOnlyOnceReleased) {
  auto pool = RecvBufferPool::Create(/*max_free_bytes=*/size_t{8} << 20);
  PushAssembler assembler(pool);
  std::vector<float> data(1 << 18);  // 1 MiB: pooled
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i);
  Tensor value = Tensor::Vector<float>(data);
  auto first = assembler.Add(EncodePushTensor(1, "k", value)[0]);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(first->value.Equals(value));
  const void* held = first->value.raw_data();
  // While the user holds the first tensor, the next gets another buffer and
  // the first keeps its contents.
  std::vector<float> other(data.size(), -1.0f);
  auto second =
      assembler.Add(EncodePushTensor(2, "k", Tensor::Vector<float>(other))[0]);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(second->value.raw_data(), held);
  EXPECT_TRUE(first->value.Equals(value));
  EXPECT_EQ(second->value.flat<float>()[0], -1.0f);
  // Once released, the buffer is reused for a tensor of the same size, also
  // when it arrives in chunks.
  first->value = Tensor();
  EXPECT_EQ(pool->free_bytes(), data.size() * sizeof(float));
  auto chunks = EncodePushTensor(3, "k", value, /*chunk_bytes=*/100000);
  ASSERT_GT(chunks.size(), 1u);
  Tensor third;
  for (const grpc::ByteBuffer& chunk : chunks) {
    auto out = assembler.Add(chunk);
    ASSERT_TRUE(out.ok()) << out.status();
    if (out->value.IsInitialized()) third = out->value;
  }
  EXPECT_EQ(third.raw_data(), held);
  EXPECT_TRUE(third.Equals(value));
  EXPECT_EQ(pool->free_bytes(), 0u);
}

TEST(TensorWireTest, PoolKeepsAtMostItsLimitOfIdleBuffers) {
  auto pool = RecvBufferPool::Create(/*max_free_bytes=*/size_t{3} << 20);
  {
    Tensor a = pool->Allocate(DataType::kFloat, TensorShape({1 << 18})).value();
    Tensor b = pool->Allocate(DataType::kFloat, TensorShape({1 << 19})).value();
    Tensor c = pool->Allocate(DataType::kFloat, TensorShape({1 << 20})).value();
    Tensor small = pool->Allocate(DataType::kFloat, TensorShape({16})).value();
    EXPECT_EQ(small.NumElements(), 16);
  }
  // 1 MiB + 2 MiB fit; the 4 MiB buffer does not.
  EXPECT_EQ(pool->free_bytes(), size_t{3} << 20);
  {
    Tensor d = pool->Allocate(DataType::kFloat, TensorShape({1 << 18})).value();
    EXPECT_EQ(pool->free_bytes(), size_t{2} << 20);
  }
  EXPECT_EQ(pool->free_bytes(), size_t{3} << 20);
}

TEST(TensorWireTest, PoolReportsMemoryItCannotGet) {
  auto pool = RecvBufferPool::Create(/*max_free_bytes=*/size_t{1} << 20);
  // 64 TiB: more than any machine of ours has.
  auto huge = pool->Allocate(DataType::kFloat, TensorShape({int64_t{1} << 44}));
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(huge.status().message().find("float32[17592186044416]"),
            std::string::npos)
      << huge.status();
}

}  // namespace
}  // namespace distflow
