// The environment srun gives each task, as Slurm documents it, and the
// cluster every task must derive from it.
#include "distributed/slurm_config.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// `sbatch --nodes=3 --ntasks=5` then `srun`: Slurm puts two tasks on each of
// the first two nodes and one on the third; this is rank `rank`'s view.
EnvironmentVariables FiveTasksOnThreeNodes(int rank) {
  const int node = rank < 2 ? 0 : rank < 4 ? 1 : 2;
  return {{"SLURM_JOB_ID", "4187"},
          {"SLURM_JOB_NODELIST", "node[01-03]"},
          {"SLURM_NODELIST", "node[01-03]"},
          {"SLURM_JOB_NUM_NODES", "3"},
          {"SLURM_NTASKS", "5"},
          {"SLURM_NPROCS", "5"},
          {"SLURM_TASKS_PER_NODE", "2(x2),1"},
          {"SLURM_STEP_NODELIST", "node[01-03]"},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1"},
          {"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_NODEID", std::to_string(node)},
          {"SLURM_LOCALID", std::to_string(rank - 2 * node)}};
}

std::string Error(const absl::StatusOr<TaskConfig>& config) {
  EXPECT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument)
      << config.status();
  return std::string(config.status().message());
}

TEST(SlurmConfigTest, RanksFillNodesInOrderWithConsecutivePorts) {
  auto config = TaskConfigFromSlurm(FiveTasksOnThreeNodes(3), /*ps_count=*/1,
                                    kDefaultSlurmBasePort);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->cluster.tasks("ps"), ElementsAre("node01:2222"));
  EXPECT_THAT(
      config->cluster.tasks("worker"),
      ElementsAre("node01:2223", "node02:2222", "node02:2223", "node03:2222"));
  EXPECT_EQ(config->job_name, "worker");
  EXPECT_EQ(config->task_index, 2);
  EXPECT_FALSE(config->is_chief);
}

TEST(SlurmConfigTest, EveryRankSeesTheSameClusterAndItsOwnTask) {
  const char* expected_jobs[] = {"ps", "ps", "worker", "worker", "worker"};
  const int expected_index[] = {0, 1, 0, 1, 2};
  ClusterSpec first;
  for (int rank = 0; rank < 5; ++rank) {
    auto config = TaskConfigFromSlurm(FiveTasksOnThreeNodes(rank),
                                      /*ps_count=*/2, /*base_port=*/7000);
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->job_name, expected_jobs[rank]) << rank;
    EXPECT_EQ(config->task_index, expected_index[rank]) << rank;
    EXPECT_EQ(config->is_chief, rank == 2) << rank;  // worker 0
    if (rank == 0) first = config->cluster;
    EXPECT_EQ(config->cluster, first) << rank;
  }
  EXPECT_THAT(first.tasks("ps"), ElementsAre("node01:7000", "node01:7001"));
  EXPECT_THAT(first.tasks("worker"),
              ElementsAre("node02:7000", "node02:7001", "node03:7000"));
}

TEST(SlurmConfigTest, StepVariablesWinOverTheJobs) {
  // `srun --nodes=2 --ntasks=2` inside a larger allocation.
  EnvironmentVariables env = {{"SLURM_JOB_NODELIST", "gpu-[1-4]x"},
                              {"SLURM_TASKS_PER_NODE", "4(x4)"},
                              {"SLURM_NTASKS", "16"},
                              {"SLURM_STEP_NODELIST", "gpu-[3-4]x"},
                              {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"},
                              {"SLURM_STEP_NUM_TASKS", "2"},
                              {"SLURM_PROCID", "1"}};
  auto config = TaskConfigFromSlurm(env, /*ps_count=*/1, 2222);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->cluster.tasks("ps"), ElementsAre("gpu-3x:2222"));
  EXPECT_THAT(config->cluster.tasks("worker"), ElementsAre("gpu-4x:2222"));
  EXPECT_TRUE(config->is_chief);
}

TEST(SlurmConfigTest, CapturedBatchEnvironment) {
  // The SLURM_* variables of rank 0 of a four-node batch job as a cluster
  // printed them (`env | grep SLURM`): SLURM_NTASKS_PER_NODE counts CPUs
  // there, and SLURM_TASKS_PER_NODE is the one to trust.
  const EnvironmentVariables env = {
      {"SLURM_NODELIST", "gnode[10,20,25,37]"},
      {"SLURMD_NODENAME", "gnode10"},
      {"SLURM_NTASKS_PER_NODE", "4"},
      {"SLURM_NNODES", "4"},
      {"SLURM_JOBID", "200505"},
      {"SLURM_NTASKS", "4"},
      {"SLURM_TASKS_PER_NODE", "1(x4)"},
      {"SLURM_JOB_ID", "200505"},
      {"SLURM_CPUS_PER_TASK", "1"},
      {"SLURM_NODEID", "0"},
      {"SLURM_NPROCS", "4"},
      {"SLURM_CPUS_ON_NODE", "4"},
      {"SLURM_PROCID", "0"},
      {"SLURM_JOB_NODELIST", "gnode[10,20,25,37]"},
      {"SLURM_LOCALID", "0"},
      {"SLURM_JOB_CPUS_PER_NODE", "4(x4)"},
      {"SLURM_JOB_NUM_NODES", "4"}};
  auto config = TaskConfigFromSlurm(env, /*ps_count=*/1, 2222);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->TaskDevice(), "/job:ps/replica:0/task:0");
  EXPECT_THAT(config->cluster.tasks("ps"), ElementsAre("gnode10:2222"));
  EXPECT_THAT(config->cluster.tasks("worker"),
              ElementsAre("gnode20:2222", "gnode25:2222", "gnode37:2222"));
}

TEST(SlurmConfigTest, TasksPerNodeFromNtasksPerNodeOrAnEvenSpread) {
  EnvironmentVariables env = {{"SLURM_JOB_NODELIST", "cn[098-099],login5"},
                              {"SLURM_NTASKS_PER_NODE", "2"},
                              {"SLURM_NTASKS", "6"},
                              {"SLURM_PROCID", "5"}};
  auto config = TaskConfigFromSlurm(env, /*ps_count=*/0, 2222);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->cluster.HasJob("ps"));
  EXPECT_THAT(config->cluster.tasks("worker"),
              ElementsAre("cn098:2222", "cn098:2223", "cn099:2222",
                          "cn099:2223", "login5:2222", "login5:2223"));
  EXPECT_EQ(config->task_index, 5);

  env.erase("SLURM_NTASKS_PER_NODE");
  config = TaskConfigFromSlurm(env, /*ps_count=*/3, 2222);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->cluster.tasks("ps"),
              ElementsAre("cn098:2222", "cn098:2223", "cn099:2222"));
}

TEST(SlurmConfigTest, ErrorsNameTheVariableAndItsValue) {
  auto env = [](const char* name, const char* value) {
    EnvironmentVariables e = FiveTasksOnThreeNodes(3);
    if (value == nullptr) {
      e.erase(name);
    } else {
      e[name] = value;
    }
    return e;
  };
  auto error = [](const EnvironmentVariables& e, int ps_count = 1,
                  int port = 2222) {
    return Error(TaskConfigFromSlurm(e, ps_count, port));
  };
  EXPECT_THAT(error(env("SLURM_PROCID", nullptr)),
              HasSubstr("SLURM_PROCID is not set: start every task with srun"));
  EXPECT_THAT(error(env("SLURM_PROCID", "three")),
              HasSubstr("SLURM_PROCID='three' is not a non-negative integer"));
  EXPECT_THAT(error(env("SLURM_PROCID", "5")),
              HasSubstr("SLURM_PROCID='5' is not below SLURM_NTASKS=5"));
  EXPECT_THAT(
      error(env("SLURM_STEP_NODELIST", "node[01-03")),
      HasSubstr("SLURM_STEP_NODELIST='node[01-03' hostlist 'node[01-03': "));
  EXPECT_THAT(error(env("SLURM_STEP_TASKS_PER_NODE", "2(x2)")),
              HasSubstr("SLURM_STEP_TASKS_PER_NODE='2(x2)' gives task counts "
                        "for 2 nodes, but SLURM_STEP_NODELIST='node[01-03]' "
                        "has 3"));
  EXPECT_THAT(error(env("SLURM_STEP_TASKS_PER_NODE", "2(x3)")),
              HasSubstr("places 6 tasks, but SLURM_NTASKS=5"));
  EXPECT_THAT(error(env("SLURM_STEP_TASKS_PER_NODE", "2(x)")),
              HasSubstr("SLURM_STEP_TASKS_PER_NODE='2(x)'"));
  // Under srun --distribution=cyclic, rank 3 is the first task of its node,
  // not the second as the block layout has it.
  EXPECT_THAT(error(env("SLURM_LOCALID", "0")),
              HasSubstr("SLURM_LOCALID=0 for SLURM_PROCID=3, but srun's block "
                        "distribution puts that rank at SLURM_LOCALID=1"));
  EXPECT_THAT(error(env("SLURM_NODEID", "0")),
              HasSubstr("SLURM_NODEID=0 for SLURM_PROCID=3"));
  EXPECT_THAT(error(FiveTasksOnThreeNodes(3), /*ps_count=*/5),
              HasSubstr("--ps_count=5 must be 0..4"));
  EXPECT_THAT(error(FiveTasksOnThreeNodes(3), /*ps_count=*/-1),
              HasSubstr("--ps_count=-1 must be 0..4"));
  EXPECT_THAT(error(FiveTasksOnThreeNodes(3), 1, /*port=*/65535),
              HasSubstr("--port=65535 leaves no port for the 2 tasks of node "
                        "node01"));
  EXPECT_THAT(error(FiveTasksOnThreeNodes(3), 1, /*port=*/0),
              HasSubstr("--port=0 is not a port"));
  EnvironmentVariables uneven = {{"SLURM_JOB_NODELIST", "n[1-2]"},
                                 {"SLURM_NTASKS", "3"},
                                 {"SLURM_PROCID", "0"}};
  EXPECT_THAT(error(uneven), HasSubstr("SLURM_NTASKS=3 tasks do not spread "
                                       "evenly over the 2 nodes"));
  // Two nodes of one name would give two tasks one address.
  EnvironmentVariables repeated = {{"SLURM_JOB_NODELIST", "n1,n1"},
                                   {"SLURM_NTASKS", "2"},
                                   {"SLURM_PROCID", "0"}};
  EXPECT_THAT(error(repeated), HasSubstr("SLURM_JOB_NODELIST='n1,n1'"));
}

// How ParseTaskConfig chooses among flags, --ps_count and TF_CONFIG.
TEST(SlurmConfigTest, ParseTaskConfigTakesTheClusterFromSlurmWithPsCount) {
  auto config = ParseTaskConfig(
      {"trainer", "--ps_count=1", "--port", "3000", "--issync=1", "data"},
      FiveTasksOnThreeNodes(0));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->job_name, "ps");
  EXPECT_THAT(config->cluster.tasks("ps"), ElementsAre("node01:3000"));
  EXPECT_THAT(config->remaining_args,
              ElementsAre("trainer", "--issync=1", "data"));
}

TEST(SlurmConfigTest, ParseTaskConfigPrecedence) {
  EnvironmentVariables slurm_and_tf_config = FiveTasksOnThreeNodes(4);
  slurm_and_tf_config["TF_CONFIG"] =
      R"({"cluster":{"ps":["p:1"],"worker":["w:1"]},"task":{"type":"ps"}})";
  // An explicit --ps_count wins over TF_CONFIG ...
  auto config = ParseTaskConfig({"t", "--ps_count=1"}, slurm_and_tf_config);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->TaskDevice(), "/job:worker/replica:0/task:3");
  // ... TF_CONFIG wins over Slurm's variables alone, and --port then belongs
  // to the program ...
  config = ParseTaskConfig({"t", "--port=80"}, slurm_and_tf_config);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->TaskDevice(), "/job:ps/replica:0/task:0");
  EXPECT_THAT(config->remaining_args, ElementsAre("t", "--port=80"));
  // ... and the seeds' flags win over both.
  config = ParseTaskConfig(
      {"t", "--ps_hosts=a:1", "--worker_hosts=b:1", "--job_name=worker"},
      slurm_and_tf_config);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->cluster.tasks("worker"), ElementsAre("b:1"));
}

TEST(SlurmConfigTest, ParseTaskConfigErrors) {
  EXPECT_THAT(Error(ParseTaskConfig({"t"}, FiveTasksOnThreeNodes(2))),
              HasSubstr("started by Slurm (SLURM_PROCID=2) but no --ps_count "
                        "was passed"));
  EXPECT_THAT(Error(ParseTaskConfig({"t", "--ps_count=1", "--job_name=ps"},
                                    FiveTasksOnThreeNodes(2))),
              HasSubstr("were both passed"));
  EXPECT_THAT(
      Error(ParseTaskConfig({"t", "--ps_count=one"}, FiveTasksOnThreeNodes(2))),
      HasSubstr("--ps_count=one is not an integer"));
  EXPECT_THAT(
      Error(ParseTaskConfig({"t", "--ps_count=1"}, EnvironmentVariables{})),
      HasSubstr("--ps_count reads the cluster from Slurm, but SLURM_PROCID is "
                "not set"));
  EXPECT_THAT(Error(ParseTaskConfig({"t"}, EnvironmentVariables{})),
              HasSubstr("no cluster given"));
}

}  // namespace
}  // namespace distflow
