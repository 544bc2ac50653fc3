// `distflow server` as real processes on 127.0.0.1: a ps task serving a real
// between-graph worker (the seeds' example binary), signals, and wrong
// command lines.
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/distflow/command_test_util.h"

namespace distflow {
namespace {

using ::distflow::testing::PickFreePort;
using ::distflow::testing::ScopedTempDir;
using ::distflow::testing::Subprocess;
using ::testing::HasSubstr;

constexpr auto kTimeout = std::chrono::seconds(60);

std::string Binary(const std::string& name) {
  return absl::StrCat(DISTFLOW_BIN_DIR, "/", name);
}

std::string Address() { return absl::StrCat("127.0.0.1:", PickFreePort()); }

std::unique_ptr<Subprocess> StartServer(std::vector<std::string> args) {
  args.insert(args.begin(), {Binary("distflow"), "server"});
  return std::make_unique<Subprocess>(args);
}

// Waits for the server's start line, which it prints once it listens.
void WaitUntilServing(Subprocess& server) {
  server.WaitForOutput("serving on", kTimeout);
  ASSERT_THAT(server.Output(), HasSubstr("serving on")) << server.Output();
}

TEST(ServerCommandTest, PsTaskServesABetweenGraphWorkerAndExitsWhenTheJobEnds) {
  const std::string ps = Address(), worker = Address();
  auto ps0 = StartServer({"--job_name=ps", "--task_index=0", "--ps_hosts=" + ps,
                          "--worker_hosts=" + worker});
  Subprocess worker0({Binary("between_graph_matmul"), "--job_name=worker",
                      "--task_index=0", "--ps_hosts=" + ps,
                      "--worker_hosts=" + worker, "--steps=5"});
  auto worker_exit = worker0.Wait(kTimeout);
  ASSERT_TRUE(worker_exit.has_value()) << "worker hung: " << worker0.Output();
  EXPECT_EQ(*worker_exit, 0) << worker0.Output();
  EXPECT_THAT(worker0.Output(), HasSubstr("[[20]]"));
  auto ps_exit = ps0->Wait(std::chrono::seconds(20));
  ASSERT_TRUE(ps_exit.has_value()) << "ps did not exit: " << ps0->Output();
  EXPECT_EQ(*ps_exit, 0) << ps0->Output();
  // One line at start: the task, its address and the cluster.
  EXPECT_THAT(ps0->Output(),
              HasSubstr(absl::StrCat("task /job:ps/replica:0/task:0 serving "
                                     "on grpc://",
                                     ps, ", cluster ps: [", ps, "], worker: [",
                                     worker, "]")));
  EXPECT_THAT(ps0->Output(), HasSubstr("the job is done"));
}

TEST(ServerCommandTest, SigtermStopsCleanlyAndSigintExits130) {
  // The cluster from --cluster_spec, then from TF_CONFIG.
  const std::string ps = Address(), worker = Address();
  ScopedTempDir dir;
  const std::string spec = dir.path() + "/cluster.json";
  std::ofstream(spec) << "{\"ps\": [\"" << ps << "\"], \"worker\": [\""
                      << worker << "\"]}";
  auto from_file = StartServer(
      {"--cluster_spec=" + spec, "--job_name=worker", "--task_index=0"});
  WaitUntilServing(*from_file);
  EXPECT_THAT(from_file->Output(), HasSubstr("grpc://" + worker));
  kill(from_file->pid(), SIGTERM);
  auto code = from_file->Wait(std::chrono::seconds(20));
  ASSERT_TRUE(code.has_value()) << "SIGTERM did not stop the server";
  EXPECT_EQ(*code, 0) << from_file->Output();

  const std::string tf_config =
      absl::StrCat("{\"cluster\": {\"ps\": [\"", ps, "\"], \"worker\": [\"",
                   worker, "\"]}, \"task\": {\"type\": \"ps\", \"index\": 0}}");
  setenv("TF_CONFIG", tf_config.c_str(), 1);
  auto from_env = StartServer({});
  unsetenv("TF_CONFIG");
  WaitUntilServing(*from_env);
  EXPECT_THAT(from_env->Output(), HasSubstr("/job:ps/replica:0/task:0"));
  kill(from_env->pid(), SIGINT);
  code = from_env->Wait(std::chrono::seconds(20));
  ASSERT_TRUE(code.has_value()) << "SIGINT did not stop the server";
  EXPECT_EQ(*code, 130) << from_env->Output();
}

TEST(ServerCommandTest, UnderSlurmTheRankPicksTheTask) {
  // Rank 1 of 3 on one node with --ps_count=2: ps task 1, on the base port
  // plus its place on the node.
  const std::vector<std::pair<const char*, std::string>> slurm = {
      {"SLURM_PROCID", "1"},
      {"SLURM_NTASKS", "3"},
      {"SLURM_JOB_NODELIST", "localhost"},
      {"SLURM_TASKS_PER_NODE", "3"}};
  // The task listens on the base port plus one, which picking the base does
  // not keep free: another test's connection may hold it (seen once in a
  // full parallel run). A start that finds it taken is tried on another base.
  int base_port = 0;
  std::unique_ptr<Subprocess> server;
  for (int attempt = 0; attempt < 5; ++attempt) {
    base_port = PickFreePort();
    for (const auto& [name, value] : slurm) setenv(name, value.c_str(), 1);
    server = StartServer({"--ps_count=2", absl::StrCat("--port=", base_port)});
    for (const auto& [name, value] : slurm) unsetenv(name);
    server->WaitForOutput("serving on", kTimeout);
    if (server->Output().find("port is in use") == std::string::npos) break;
  }
  WaitUntilServing(*server);
  EXPECT_THAT(server->Output(),
              HasSubstr(absl::StrCat("task /job:ps/replica:0/task:1 serving on "
                                     "grpc://localhost:",
                                     base_port + 1)));
  kill(server->pid(), SIGTERM);
  auto code = server->Wait(std::chrono::seconds(20));
  ASSERT_TRUE(code.has_value()) << "SIGTERM did not stop the server";
  EXPECT_EQ(*code, 0) << server->Output();
}

TEST(ServerCommandTest, AnUnknownFlagIsAUsageErrorNamingIt) {
  auto server = StartServer({"--job_nam=ps", "--ps_hosts=" + Address()});
  auto code = server->Wait(kTimeout);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 2);
  EXPECT_THAT(server->Output(), HasSubstr("--job_nam"));
}

TEST(ServerCommandTest, ATaskIndexOutOfRangeIsAUsageErrorNamingIt) {
  auto server =
      StartServer({"--job_name=ps", "--task_index=3", "--ps_hosts=" + Address(),
                   "--worker_hosts=" + Address()});
  auto code = server->Wait(kTimeout);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 2) << server->Output();
  EXPECT_THAT(server->Output(), HasSubstr("task_index"));
  EXPECT_THAT(server->Output(), HasSubstr("3"));
}

TEST(ServerCommandTest, APortInUseFailsNamingTheAddress) {
  const std::string ps = Address(), worker = Address();
  auto first = StartServer(
      {"--job_name=ps", "--ps_hosts=" + ps, "--worker_hosts=" + worker});
  WaitUntilServing(*first);
  auto second = StartServer(
      {"--job_name=ps", "--ps_hosts=" + ps, "--worker_hosts=" + worker});
  auto code = second->Wait(kTimeout);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 1) << second->Output();
  EXPECT_THAT(second->Output(), HasSubstr(ps));
  EXPECT_THAT(second->Output(), HasSubstr("in use"));
}

TEST(ServerCommandTest, HelpShowsTheFlagsAndAnExample) {
  auto server = StartServer({"--help"});
  auto code = server->Wait(kTimeout);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
  for (const char* text :
       {"--job_name", "--task_index", "--ps_hosts", "--worker_hosts",
        "--cluster_spec", "TF_CONFIG", "Examples:", "Exit status"}) {
    EXPECT_THAT(server->Output(), HasSubstr(text));
  }
}

}  // namespace
}  // namespace distflow
