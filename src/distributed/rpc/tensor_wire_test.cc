#include "distributed/rpc/tensor_wire.h"

#include "core/gathered_tensor.h"
#include "gtest/gtest.h"
#include "proto/worker.pb.h"

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

// 1000 int32s 0, 7, 14, ... gathered from parts of 300, 0, 450 and 250.
Tensor GatheredSevens() {
  std::vector<Tensor> parts;
  int32_t next = 0;
  for (int n : {300, 0, 450, 250}) {
    std::vector<int32_t> values(n);
    for (int32_t& v : values) v = 7 * next++;
    parts.push_back(Tensor::Vector<int32_t>(values));
  }
  absl::StatusOr<Tensor> gathered =
      GatherTensors(DataType::kInt32, std::move(parts));
  EXPECT_TRUE(gathered.ok()) << gathered.status();
  return *gathered;
}

// A gathered tensor's chunks are slices of its parts (a chunk that spans two
// parts has two slices), and the receiver assembles the elements in order.
TEST(TensorWireTest, GatheredTensorTravelsFromItsPartsInChunks) {
  const Tensor value = GatheredSevens();
  const ByteRanges ranges = TensorByteRanges(value);
  auto messages = EncodePushTensor(3, "k", value, /*chunk_bytes=*/1024);
  ASSERT_EQ(messages.size(), 4u);  // ceil(4000 / 1024)
  std::vector<grpc::Slice> first;
  ASSERT_TRUE(messages[0].Dump(&first).ok());
  // Header, the first part (1200 bytes) being more than one chunk.
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(static_cast<const void*>(first[1].begin()), ranges[0].data());
  std::vector<grpc::Slice> second;
  ASSERT_TRUE(messages[1].Dump(&second).ok());
  // Header, the first part's last 176 bytes, then the next part's first 848.
  ASSERT_EQ(second.size(), 3u);
  EXPECT_EQ(second[1].size(), 176u);
  EXPECT_EQ(static_cast<const void*>(second[2].begin()), ranges[1].data());
  PushAssembler assembler;
  Tensor result;
  for (const grpc::ByteBuffer& m : messages) {
    auto out = assembler.Add(m);
    ASSERT_TRUE(out.ok()) << out.status();
    if (out->value.IsInitialized()) result = out->value;
  }
  std::vector<int32_t> expected(1000);
  for (int i = 0; i < 1000; ++i) expected[i] = 7 * i;
  EXPECT_TRUE(result.Equals(Tensor::Vector<int32_t>(expected)));
}

// A same-host offer of a gathered tensor lists where each part lies; the
// receiver (here this very process) reads them end to end.
TEST(TensorWireTest, GatheredTensorIsReadFromItsPartsOnOneHost) {
  const Tensor value = GatheredSevens();
  grpc::ByteBuffer offer = EncodeSameHostPush(OfferSameHost(4, "k", value));
  PushAssembler assembler;
  auto out = assembler.Add(offer);
  ASSERT_TRUE(out.ok()) << out.status();
  if (!out->same_host_refused.empty()) {
    GTEST_SKIP() << "this process cannot read itself: "
                 << out->same_host_refused;
  }
  EXPECT_TRUE(out->same_host);
  std::vector<int32_t> expected(1000);
  for (int i = 0; i < 1000; ++i) expected[i] = 7 * i;
  EXPECT_TRUE(out->value.Equals(Tensor::Vector<int32_t>(expected)));
}

// Ranges that do not add up to the tensor's size are a malformed message,
// named by its key; nothing is read.
TEST(TensorWireTest, SameHostRangesOfTheWrongLengthAreRefused) {
  const Tensor value = GatheredSevens();
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(
      EncodeSameHostPush(OfferSameHost(5, "bad", value)).Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  proto::PushTensorHeader header;
  ASSERT_TRUE(header.ParseFromString(bytes.substr(4)));
  ASSERT_EQ(header.same_host().ranges_size(), 3);
  header.mutable_same_host()->mutable_ranges(2)->set_length(8);
  grpc::Slice framed = FramedHeaderSlice(header);
  PushAssembler assembler;
  auto out = assembler.Add(grpc::ByteBuffer(&framed, 1));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("PushTensor 'bad'"), std::string::npos)
      << out.status();
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
