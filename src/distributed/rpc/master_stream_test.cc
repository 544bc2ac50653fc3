// MasterStreamService: the coding of feeds and fetches as a stream of
// messages, and steps of a session whose master is reached over gRPC (as
// from another process), with tensors of every kind and larger than one
// message.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor_coding.h"
#include "distflow/distflow.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/tensor_stream.h"
#include "distributed/rpc/test_cluster.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/master.grpc.pb.h"

namespace distflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Tensor Strings(const std::vector<std::string>& values) {
  Tensor t(DataType::kString,
           TensorShape({static_cast<int64_t>(values.size())}));
  for (size_t i = 0; i < values.size(); ++i)
    t.flat<std::string>()[i] = values[i];
  return t;
}

Tensor Bytes(int64_t n) {
  Tensor t(DataType::kUInt8, TensorShape({n}));
  uint8_t* p = t.flat<uint8_t>().data();
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i * 7 + i / 251);
  return t;
}

std::vector<Tensor> Decode(const std::vector<grpc::ByteBuffer>& messages,
                           std::vector<std::string> names) {
  TensorStreamDecoder decoder("feed", std::move(names));
  for (const grpc::ByteBuffer& m : messages) {
    proto::RunStepStreamHeader header;
    absl::Status s = decoder.Add(m, &header);
    EXPECT_TRUE(s.ok()) << s;
  }
  auto tensors = decoder.Finish();
  EXPECT_TRUE(tensors.ok()) << tensors.status();
  return tensors.ok() ? *tensors : std::vector<Tensor>();
}

TEST(TensorStreamTest, SmallTensorsShareOneMessage) {
  proto::RunStepStreamHeader first;
  first.mutable_step()->set_session_handle("s");
  auto messages = EncodeTensorStream(
      first, {Tensor::Scalar<float>(1.5f), Strings({"a", "bc"}),
              Tensor(DataType::kInt64, TensorShape({0, 3}))});
  ASSERT_EQ(messages.size(), 1u);
  auto out = Decode(messages, {"f", "s", "z"});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].flat<float>()[0], 1.5f);
  EXPECT_THAT(out[1].flat<std::string>(), ElementsAre("a", "bc"));
  EXPECT_EQ(out[2].shape(), TensorShape({0, 3}));
}

// A tensor larger than a message spans several; the bytes around every
// boundary arrive in place.
TEST(TensorStreamTest, LargeTensorSpansMessages) {
  const Tensor big = Bytes(10'000);
  auto messages = EncodeTensorStream(proto::RunStepStreamHeader(),
                                     {Tensor::Scalar<int32_t>(3), big},
                                     /*message_bytes=*/1024);
  EXPECT_EQ(messages.size(), 10u);  // 4 + 10,000 bytes in 1,024-byte messages
  auto out = Decode(messages, {"a", "b"});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].flat<int32_t>()[0], 3);
  EXPECT_EQ(std::memcmp(out[1].raw_data(), big.raw_data(), big.TotalBytes()),
            0);
}

TEST(TensorStreamTest, MissingAndStrayPiecesNameTheTensor) {
  const Tensor big = Bytes(4096);
  auto messages = EncodeTensorStream(proto::RunStepStreamHeader(), {big},
                                     /*message_bytes=*/1024);
  ASSERT_EQ(messages.size(), 4u);
  {
    TensorStreamDecoder decoder("fetch", {"y:0"});
    proto::RunStepStreamHeader header;
    for (int i = 0; i < 3; ++i)
      ASSERT_TRUE(decoder.Add(messages[i], &header).ok());
    auto out = decoder.Finish();
    EXPECT_TRUE(absl::IsInvalidArgument(out.status()));
    EXPECT_THAT(
        out.status().message(),
        HasSubstr("fetch 'y:0' arrived incomplete (3072 bytes of 4096)"));
  }
  {
    TensorStreamDecoder decoder("feed", {});
    proto::RunStepStreamHeader header;
    absl::Status s = decoder.Add(messages[0], &header);
    EXPECT_TRUE(absl::IsInvalidArgument(s));
    EXPECT_THAT(s.message(), HasSubstr("a piece of feed 0"));
  }
  {
    // A header that claims more bytes than the message holds.
    proto::RunStepStreamHeader header;
    proto::TensorPiece* piece = header.add_piece();
    piece->set_dtype(proto::DT_FLOAT);
    piece->mutable_shape()->add_dim(100);
    piece->set_length(400);
    grpc::Slice slice = FramedHeaderSlice(header);
    grpc::ByteBuffer lying(&slice, 1);
    TensorStreamDecoder decoder("feed", {"x:0"});
    absl::Status s = decoder.Add(lying, &header);
    EXPECT_TRUE(absl::IsInvalidArgument(s));
    EXPECT_THAT(s.message(), HasSubstr("feed 'x:0': 400 bytes at offset 0"));
  }
}

// A session that reaches its master over gRPC: the target spells the
// master's address another way, so this process does not find it as a local
// master and every step crosses the connection.
class RemoteClientTest : public PsAndWorkerTest {
 protected:
  void SetUp() override {
    PsAndWorkerTest::SetUp();
    options_ = RemoteSessionTarget(cluster_->server("worker", 0));
  }
  SessionOptions options_;
};

TEST_F(RemoteClientTest, FeedsAndFetchesOfEveryKindRoundTrip) {
  Scope root = Scope::NewRootScope();
  Scope ps = root.WithDevice("/job:ps/task:0");
  Output f = ops::Placeholder(root.WithOpName("f"), DataType::kFloat);
  Output s = ops::Placeholder(root.WithOpName("s"), DataType::kString);
  Output z = ops::Placeholder(root.WithOpName("z"), DataType::kInt64);
  Output big = ops::Placeholder(root.WithOpName("big"), DataType::kUInt8);
  // Through the ps and back: the fetches cross tasks too.
  std::vector<Output> fetches = {ops::Identity(ps, f), ops::Identity(ps, s),
                                 ops::Identity(ps, z), ops::Identity(ps, big),
                                 ops::Add(root, f, 1.0f)};
  auto session = ClientSession::Create(root, options_);
  ASSERT_TRUE(session.ok()) << session.status();
  // 10 MiB: more than one message of the stream.
  const Tensor bytes = Bytes(10 << 20);
  auto out =
      (*session)->Run({{f, Tensor::Matrix<float>({{1, 2}, {3, 4}})},
                       {s, Strings({"", "two", std::string(5000, 'x')})},
                       {z, Tensor(DataType::kInt64, TensorShape({2, 0}))},
                       {big, bytes}},
                      fetches);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].flat<float>(), ElementsAre(1, 2, 3, 4));
  EXPECT_EQ((*out)[0].shape(), TensorShape({2, 2}));
  EXPECT_THAT((*out)[1].flat<std::string>(),
              ElementsAre("", "two", std::string(5000, 'x')));
  EXPECT_EQ((*out)[2].shape(), TensorShape({2, 0}));
  ASSERT_EQ((*out)[3].TotalBytes(), bytes.TotalBytes());
  EXPECT_EQ(
      std::memcmp((*out)[3].raw_data(), bytes.raw_data(), bytes.TotalBytes()),
      0);
  EXPECT_THAT((*out)[4].flat<float>(), ElementsAre(2, 3, 4, 5));
}

TEST_F(RemoteClientTest, MasterErrorsReachTheClient) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
  Output y = ops::Identity(root, x);
  auto session = ClientSession::Create(root, options_);
  ASSERT_TRUE(session.ok()) << session.status();
  auto out = (*session)->Run({y});  // x is not fed
  EXPECT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("x"));
  // The session still works afterwards.
  auto again = (*session)->Run({{x, Tensor::Scalar<float>(2)}}, {y});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)[0].flat<float>()[0], 2);
}

// Clients of the first version call the unary RunStep with TensorProtos; the
// master still answers it.
TEST_F(RemoteClientTest, UnaryRunStepStillServed) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
  ops::Identity(root.WithOpName("y"), x);
  proto::GraphDef graph;
  ASSERT_TRUE(root.ToGraphDef(&graph).ok());
  auto stub =
      proto::MasterService::NewStub(NewChannel(cluster_->address("worker", 0)));
  proto::CreateSessionRequest create;
  *create.mutable_graph() = graph;
  proto::CreateSessionResponse created;
  grpc::ClientContext ctx1;
  ASSERT_TRUE(stub->CreateSession(&ctx1, create, &created).ok());
  proto::RunStepRequest run;
  run.set_session_handle(created.session_handle());
  run.add_feed_name("x:0");
  TensorToProto(Tensor::Scalar<float>(7), run.add_feed());
  run.add_fetch("y:0");
  proto::RunStepResponse response;
  grpc::ClientContext ctx2;
  grpc::Status s = stub->RunStep(&ctx2, run, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(response.fetch_size(), 1);
  auto y = TensorFromProto(response.fetch(0));
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->flat<float>()[0], 7);
}

}  // namespace
}  // namespace distflow
