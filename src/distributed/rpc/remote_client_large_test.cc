// A client in one process feeds a 2.5 GiB tensor to a master in another and
// fetches 2.5 GiB back, past gRPC's and protobuf's 2 GiB message limit,
// without extra full copies of the tensor on either side (their peak memory
// is checked). ctest runs it alone (see CMakeLists.txt): the two processes
// hold about 7.5 GiB at their peak.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "distflow/distflow.h"
#include "distributed/rpc/grpc_server.h"
#include "gtest/gtest.h"
#include "tests/subprocess.h"

namespace distflow {
namespace {

constexpr int64_t kBytes = int64_t{5} << 29;  // 2.5 GiB
// What a process may hold beyond the tensors it must: gRPC's messages in
// flight, its buffers, the rest of the program. A full extra copy of the
// tensor (2.5 GiB) would exceed it several times over.
constexpr int64_t kSlackBytes = int64_t{512} << 20;

// The peak resident memory of process `pid` ("self" for this one), in bytes.
int64_t PeakResidentBytes(const std::string& pid) {
  std::ifstream status("/proc/" + pid + "/status");
  std::string line;
  while (std::getline(status, line)) {
    int64_t kib = 0;
    if (line.rfind("VmHWM:", 0) == 0 &&
        absl::SimpleAtoi(line.substr(6, line.size() - 6 - 3), &kib)) {
      return kib << 10;
    }
  }
  return -1;
}

TEST(RemoteClientLargeTest, TwoAndAHalfGiBFeedAndFetch) {
  testing::Subprocess master({"/proc/self/exe", "--serve_master"});
  ASSERT_TRUE(master.started());
  master.WaitForOutput("listening on port ", std::chrono::seconds(30));
  const std::string output = master.Output();
  const size_t at = output.find("listening on port ");
  ASSERT_NE(at, std::string::npos) << output;
  const std::string port =
      output.substr(at + 18, output.find('\n', at) - at - 18);

  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kUInt8);
  Output y = ops::Identity(root.WithOpName("y"), x);
  SessionOptions options;
  options.target = "grpc://127.0.0.1:" + port;
  auto session = ClientSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();

  const int64_t before = PeakResidentBytes("self");
  Tensor feed(DataType::kUInt8, TensorShape({kBytes}));
  uint8_t* p = feed.flat<uint8_t>().data();
  for (int64_t i = 0; i < kBytes; ++i) p[i] = static_cast<uint8_t>(i % 251);
  auto out = (*session)->Run({{x, feed}}, {y});
  ASSERT_TRUE(out.ok()) << out.status() << "\nmaster:\n" << master.Output();
  ASSERT_EQ((*out)[0].TotalBytes(), static_cast<size_t>(kBytes));
  EXPECT_EQ(std::memcmp((*out)[0].raw_data(), p, kBytes), 0);

  // The client holds its feed and the fetch; the master the feed, which is
  // also the fetch (Identity passes the buffer on).
  const int64_t client_peak = PeakResidentBytes("self") - before;
  const int64_t master_peak = PeakResidentBytes(std::to_string(master.pid()));
  std::printf("peak memory: client +%.2f GiB, master %.2f GiB\n",
              client_peak / double(1 << 30), master_peak / double(1 << 30));
  EXPECT_LT(client_peak, 2 * kBytes + kSlackBytes);
  EXPECT_GT(master_peak, kBytes);
  EXPECT_LT(master_peak, kBytes + kSlackBytes);
}

}  // namespace
}  // namespace distflow

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--serve_master") {
    auto server = distflow::GrpcServer::Create({{"worker", {"127.0.0.1:0"}}},
                                               "worker", 0);
    if (!server.ok()) {
      std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
      return 1;
    }
    std::printf("listening on port %d\n", (*server)->port());
    std::fflush(stdout);
    return (*server)->Join().ok() ? 0 : 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
