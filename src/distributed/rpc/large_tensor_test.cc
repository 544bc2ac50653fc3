// Tensors far past gRPC's 4 MiB message limit cross between real servers on
// 127.0.0.1. These tests hold gigabytes at once (the sender's tensor, the
// receiver's copy, buffers in flight), so ctest runs them one at a time (see
// CMakeLists.txt).
#include <cstdint>

#include "distflow/distflow.h"
#include "distributed/rpc/same_host.h"
#include "distributed/rpc/tensor_wire.h"
#include "distributed/rpc/test_cluster.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

// A tensor of kElements int32s crosses from the ps to the worker (gRPC's
// default limit is 4 MiB; the tensor goes as several chunks), and arrives
// intact: slices around the chunk boundaries and at the end hold the values the
// ps made.
void CheckLargeTensorCrossesTasks(int32_t kElements) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  constexpr int32_t kChunkElements =
      static_cast<int32_t>(kDefaultPushChunkBytes / 4);
  Scope root = Scope::NewRootScope();
  Output big = ops::Range(root.WithDevice("/job:ps/task:0").WithOpName("big"),
                          0, kElements);
  Scope worker = root.WithDevice("/job:worker/task:0");
  Output boundary = ops::Slice(worker.WithOpName("boundary"), big,
                               Tensor::Vector<int32_t>({kChunkElements - 2}),
                               Tensor::Vector<int32_t>({4}));
  Output tail = ops::Slice(worker.WithOpName("tail"), big,
                           Tensor::Vector<int32_t>({kElements - 2}),
                           Tensor::Vector<int32_t>({2}));
  auto session = ClientSession::Create(
      root, SessionTarget((*cluster)->server("worker", 0)));
  ASSERT_TRUE(session.ok()) << session.status();
  // Two steps: between hosts (the tcp_path. run) the first push goes over
  // gRPC, whose answer offers a data connection, and the second on it. (A
  // third or fourth step may be needed there: pushes go over gRPC until the
  // connection's hello is answered, which a busy machine can delay.)
  GrpcServer* receiver = (*cluster)->server("worker", 0);
  // (On one host the tensor is offered by the same-host path instead.)
  const bool between_hosts = !SameHostTransportAllowedByEnv();
  for (int step = 0; step < 2 || (between_hosts && step < 4 &&
                                  receiver->data_tensors_received() == 0);
       ++step) {
    if (between_hosts && step > 0) {
      ASSERT_EQ(
          AwaitEstablishedTo(receiver->data_port(), DataSocketsPerConnection()),
          DataSocketsPerConnection());
    }
    auto out = (*session)->Run({boundary, tail});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT((*out)[0].flat<int32_t>(),
                ::testing::ElementsAre(kChunkElements - 2, kChunkElements - 1,
                                       kChunkElements, kChunkElements + 1));
    EXPECT_THAT((*out)[1].flat<int32_t>(),
                ::testing::ElementsAre(kElements - 2, kElements - 1));
  }
  if (between_hosts) {
    EXPECT_EQ(receiver->data_tensors_received(), 1);
  }
}

TEST(LargeTensorTest, SixHundredMiBTensorCrossesTasks) {
  CheckLargeTensorCrossesTasks((600 << 20) / 4);
}

// Past gRPC's (and protobuf's) 2 GiB message limit, where TensorFlow fails.
TEST(LargeTensorTest, TwoAndAHalfGiBTensorCrossesTasks) {
  CheckLargeTensorCrossesTasks(static_cast<int32_t>((int64_t{5} << 29) / 4));
}

}  // namespace
}  // namespace distflow
