#include "tools/distflow/cluster_layout.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace distflow {
namespace tools {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

std::string Env(const TaskSpec& task, const std::string& name) {
  for (const auto& [key, value] : task.env) {
    if (key == name) return value;
  }
  return "";
}

TEST(ClusterLayoutTest, SeedsFlagsAndTfConfigForPsAndWorkers) {
  LocalClusterOptions options;
  options.ps = 1;
  options.workers = 2;
  options.program = {"./trainer", "--issync=1"};
  auto tasks = LayOutLocalCluster(options, {5000, 5001, 5002});
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  ASSERT_EQ(tasks->size(), 3);
  EXPECT_EQ((*tasks)[0].name, "ps0");
  EXPECT_EQ((*tasks)[2].name, "worker1");
  EXPECT_THAT((*tasks)[2].argv,
              ElementsAre("./trainer", "--issync=1", "--job_name=worker",
                          "--task_index=1", "--ps_hosts=127.0.0.1:5000",
                          "--worker_hosts=127.0.0.1:5001,127.0.0.1:5002"));
  const auto tf_config = nlohmann::json::parse(Env((*tasks)[2], "TF_CONFIG"));
  EXPECT_EQ(tf_config["cluster"]["ps"],
            nlohmann::json::array({"127.0.0.1:5000"}));
  EXPECT_EQ(tf_config["cluster"]["worker"],
            nlohmann::json::array({"127.0.0.1:5001", "127.0.0.1:5002"}));
  EXPECT_EQ(tf_config["task"]["type"], "worker");
  EXPECT_EQ(tf_config["task"]["index"], 1);
  EXPECT_EQ(ChiefTaskName(options), "worker0");
}

TEST(ClusterLayoutTest, ChiefJobTravelsInTfConfigOnly) {
  LocalClusterOptions options;
  options.ps = 2;
  options.workers = 1;
  options.chief = true;
  options.program = {"./trainer"};
  auto tasks = LayOutLocalCluster(options, {1, 2, 3, 4});
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  std::vector<std::string> names;
  for (const TaskSpec& t : *tasks) names.push_back(t.name);
  EXPECT_THAT(names, ElementsAre("ps0", "ps1", "chief", "worker0"));
  EXPECT_THAT((*tasks)[2].argv, ElementsAre("./trainer"));
  const auto tf_config = nlohmann::json::parse(Env((*tasks)[2], "TF_CONFIG"));
  EXPECT_EQ(tf_config["cluster"]["chief"],
            nlohmann::json::array({"127.0.0.1:3"}));
  EXPECT_EQ(tf_config["task"]["type"], "chief");
  EXPECT_EQ(tf_config["task"]["index"], 0);
  EXPECT_EQ(ChiefTaskName(options), "chief");
}

TEST(ClusterLayoutTest, NoPsJobWhenThereAreNoPsTasks) {
  LocalClusterOptions options;
  options.ps = 0;
  options.workers = 1;
  options.program = {"./trainer"};
  auto tasks = LayOutLocalCluster(options, {7});
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  const auto tf_config = nlohmann::json::parse(Env((*tasks)[0], "TF_CONFIG"));
  EXPECT_FALSE(tf_config["cluster"].contains("ps"));
  EXPECT_THAT((*tasks)[0].env,
              testing::Contains(Pair("PYTHONUNBUFFERED", "1")));
}

TEST(ClusterLayoutTest, RefusesAnEmptyProgramOrNoWorkers) {
  LocalClusterOptions options;
  options.program = {};
  EXPECT_THAT(LayOutLocalCluster(options, {1, 2, 3}).status().message(),
              HasSubstr("no program to run"));
  options.program = {"./trainer"};
  options.workers = 0;
  EXPECT_THAT(LayOutLocalCluster(options, {1}).status().message(),
              HasSubstr("at least one worker"));
}

}  // namespace
}  // namespace tools
}  // namespace distflow
