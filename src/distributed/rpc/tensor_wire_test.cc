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

}  // namespace
}  // namespace distflow
