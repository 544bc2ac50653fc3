// Tensors pushed over TCP land in gRPC's read buffers before they are copied
// into the tensor: those buffers must be reused from step to step, not
// returned to the system and faulted in afresh (a page fault per 4 KiB, which
// cost the receiver about a third of its CPU time).
#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>

#include "distflow/distflow.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/test_cluster.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

int64_t MinorPageFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

TEST(ReceiveBuffersTest, RepeatedPushesOverTcpReuseTheirMemory) {
  if (std::getenv("GLIBC_TUNABLES") != nullptr ||
      std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr) {
    GTEST_SKIP() << "malloc's limits are set from the environment";
  }
#ifndef __GLIBC__
  GTEST_SKIP() << "malloc's limits are set only under glibc";
#endif
  ServerOptions tcp_only;
  tcp_only.same_host_transport = false;
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}}, tcp_only);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  constexpr int32_t kBytes = 1 << 20;  // one PushTensor message
  Scope root = Scope::NewRootScope();
  Scope ps = root.WithDevice("/job:ps/task:0");
  ops::Variable v(ps.WithOpName("v"),
                  ops::Fill(ps, Tensor::Vector<int32_t>({kBytes / 4}), 1.0f));
  Output first =
      ops::Slice(root.WithDevice("/job:worker/task:0"), v,
                 Tensor::Vector<int32_t>({0}), Tensor::Vector<int32_t>({1}));
  SessionOptions options;
  options.target = (*cluster)->server("worker", 0)->target();
  auto session = ClientSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE(
      (*session)->RunTargets({ops::GlobalVariablesInitializer(root)}).ok());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE((*session)->Run({first}).ok());

  constexpr int kSteps = 20;
  const int64_t before = MinorPageFaults();
  for (int i = 0; i < kSteps; ++i) {
    auto out = (*session)->Run({first});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->at(0).flat<float>()[0], 1.0f);
  }
  const int64_t faults = MinorPageFaults() - before;
  // With malloc's default limits 60-100% of the received pages were faulted
  // in afresh at every step; with the buffers kept, 0-25% (glibc's per-thread
  // heaps still grow and shrink as different threads read).
  constexpr int64_t kPagesPerStep = kBytes / 4096;
  EXPECT_LT(faults, kSteps * kPagesPerStep / 2)
      << faults << " page faults for " << kSteps << " steps that each moved "
      << kPagesPerStep << " pages over TCP";
}

}  // namespace
}  // namespace distflow
