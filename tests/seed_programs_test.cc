// The seeds' three shapes of distributed program, run as real processes on
// 127.0.0.1: every task is a process of the example binary with the seeds'
// flags.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "subprocess.h"

namespace distflow {
namespace {

using ::distflow::testing::PickFreePort;
using ::distflow::testing::Subprocess;
using ::testing::HasSubstr;

constexpr auto kTimeout = std::chrono::seconds(60);

std::string Binary(const std::string& name) {
  return absl::StrCat(DISTFLOW_BIN_DIR, "/", name);
}

std::string Hosts(int n) {
  std::vector<std::string> hosts;
  for (int i = 0; i < n; ++i) {
    hosts.push_back(absl::StrCat("127.0.0.1:", PickFreePort()));
  }
  return absl::StrJoin(hosts, ",");
}

std::unique_ptr<Subprocess> Start(const std::string& binary,
                                  const std::string& job, int index,
                                  const std::string& ps_hosts,
                                  const std::string& worker_hosts,
                                  std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {
      Binary(binary), "--job_name=" + job, absl::StrCat("--task_index=", index),
      "--ps_hosts=" + ps_hosts, "--worker_hosts=" + worker_hosts};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return std::make_unique<Subprocess>(argv);
}

TEST(SeedProgramsTest, BetweenGraphPrintsProductEachStepAndPsExits) {
  const std::string ps = Hosts(1), workers = Hosts(1);
  auto ps0 = Start("between_graph_matmul", "ps", 0, ps, workers);
  auto worker0 =
      Start("between_graph_matmul", "worker", 0, ps, workers, {"--steps=5"});
  ASSERT_TRUE(ps0->started() && worker0->started());
  auto worker_exit = worker0->Wait(kTimeout);
  ASSERT_TRUE(worker_exit.has_value()) << "worker hung: " << worker0->Output();
  EXPECT_EQ(*worker_exit, 0) << worker0->Output();
  EXPECT_EQ(worker0->Output().find("error"), std::string::npos)
      << worker0->Output();
  std::vector<std::string> lines =
      absl::StrSplit(worker0->Output(), '\n', absl::SkipEmpty());
  int products = 0;
  for (const auto& line : lines) products += line == "[[20]]";
  EXPECT_EQ(products, 5) << worker0->Output();
  // The ps task exits by itself once the worker is done.
  auto ps_exit = ps0->Wait(std::chrono::seconds(20));
  ASSERT_TRUE(ps_exit.has_value()) << "ps did not exit: " << ps0->Output();
  EXPECT_EQ(*ps_exit, 0) << ps0->Output();
}

TEST(SeedProgramsTest, InGraphClientDrivesTwoPsAndTwoWorkers) {
  const std::string ps = Hosts(2), workers = Hosts(2);
  std::vector<std::unique_ptr<Subprocess>> tasks;
  for (int i = 0; i < 2; ++i) {
    tasks.push_back(Start("in_graph", "ps", i, ps, workers));
    tasks.push_back(Start("in_graph", "worker", i, ps, workers));
  }
  auto client = Start("in_graph", "client", 0, ps, workers);
  auto client_exit = client->Wait(kTimeout);
  ASSERT_TRUE(client_exit.has_value()) << "client hung: " << client->Output();
  EXPECT_EQ(*client_exit, 0) << client->Output();
  // a.b + b.a with a = [[1,2],[3,4]], b = [[5,6],[7,8]].
  EXPECT_THAT(client->Output(), HasSubstr("[[42 56]\n [74 96]]"));
  for (auto& task : tasks) {
    auto code = task->Wait(std::chrono::seconds(20));
    ASSERT_TRUE(code.has_value()) << "a task did not exit: " << task->Output();
    EXPECT_EQ(*code, 0) << task->Output();
  }
}

TEST(SeedProgramsTest, ModelParallelLayersOnTwoWorkers) {
  const std::string ps = Hosts(1), workers = Hosts(2);
  auto ps0 = Start("model_parallel", "ps", 0, ps, workers);
  auto worker1 = Start("model_parallel", "worker", 1, ps, workers);
  auto worker0 = Start("model_parallel", "worker", 0, ps, workers);
  auto code = worker0->Wait(kTimeout);
  ASSERT_TRUE(code.has_value()) << "worker 0 hung: " << worker0->Output();
  EXPECT_EQ(*code, 0) << worker0->Output();
  EXPECT_THAT(worker0->Output(), HasSubstr("[[17]]"));
  for (Subprocess* task : {ps0.get(), worker1.get()}) {
    auto exit = task->Wait(std::chrono::seconds(20));
    ASSERT_TRUE(exit.has_value()) << "a task did not exit: " << task->Output();
    EXPECT_EQ(*exit, 0) << task->Output();
  }
}

TEST(SeedProgramsTest, KilledPsGivesTheWorkerUnavailableNamingItsAddress) {
  const std::string ps = Hosts(1), workers = Hosts(1);
  auto ps0 = Start("between_graph_matmul", "ps", 0, ps, workers);
  auto worker0 = Start("between_graph_matmul", "worker", 0, ps, workers,
                       {"--steps=100000000"});
  // Wait until steps run, then kill -9 the ps.
  worker0->WaitForOutput("[[20]]", kTimeout);
  ASSERT_THAT(worker0->Output(), HasSubstr("[[20]]"));
  ps0->Kill();
  auto code = worker0->Wait(std::chrono::seconds(20));
  ASSERT_TRUE(code.has_value())
      << "worker hung after the ps died: " << worker0->Output();
  EXPECT_EQ(*code, 1);
  EXPECT_THAT(worker0->Output(), HasSubstr("UNAVAILABLE"));
  EXPECT_THAT(worker0->Output(), HasSubstr(ps));
}

// A hung ps (stopped, its connections still open) is detected by keepalive
// pings: the worker's step fails with UNAVAILABLE naming the ps's address
// within seconds instead of waiting forever.
TEST(SeedProgramsTest, HungPsGivesTheWorkerUnavailableWithinSeconds) {
  const std::string ps = Hosts(1), workers = Hosts(1);
  auto ps0 = Start("between_graph_matmul", "ps", 0, ps, workers);
  auto worker0 = Start("between_graph_matmul", "worker", 0, ps, workers,
                       {"--steps=100000000"});
  worker0->WaitForOutput("[[20]]", kTimeout);
  ASSERT_THAT(worker0->Output(), HasSubstr("[[20]]"));
  ps0->Pause();
  const auto start = std::chrono::steady_clock::now();
  auto code = worker0->Wait(std::chrono::seconds(30));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ps0->Resume();
  ASSERT_TRUE(code.has_value())
      << "worker hung after the ps hung: " << worker0->Output();
  EXPECT_EQ(*code, 1);
  EXPECT_THAT(worker0->Output(), HasSubstr("UNAVAILABLE"));
  EXPECT_THAT(worker0->Output(), HasSubstr(ps));
  EXPECT_LT(elapsed, std::chrono::seconds(20));
}

}  // namespace
}  // namespace distflow
