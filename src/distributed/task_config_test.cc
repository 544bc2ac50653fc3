#include <cstdlib>
#include <string>
#include <vector>

#include "distflow/cluster.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kKubeflow[] =
    R"({"cluster": {"chief": ["c:2222"], "worker": ["w0:2222", "w1:2222"],)"
    R"( "ps": ["p:2222"]}, "task": {"type": "worker", "index": 1}})";

std::string InvalidArgument(const absl::StatusOr<TaskConfig>& result) {
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument)
      << result.status();
  return std::string(result.status().message());
}

TEST(TaskConfigTest, SeedFlagsWithEqualsSign) {
  auto config = ParseTaskConfig(
      {"trainer", "--ps_hosts=p0:2222,p1:2222",
       "--worker_hosts=w0:2222,w1:2222", "--job_name=worker", "--task_index=1"},
      "");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->job_name, "worker");
  EXPECT_EQ(config->task_index, 1);
  EXPECT_FALSE(config->is_chief);
  EXPECT_THAT(config->cluster.tasks("ps"), ElementsAre("p0:2222", "p1:2222"));
  EXPECT_THAT(config->cluster.tasks("worker"),
              ElementsAre("w0:2222", "w1:2222"));
  EXPECT_THAT(config->remaining_args, ElementsAre("trainer"));
  EXPECT_EQ(config->TaskDevice(), "/job:worker/replica:0/task:1");
}

TEST(TaskConfigTest, SpaceSeparatedAndSingleDashFlagsAndPassThrough) {
  auto config =
      ParseTaskConfig({"trainer", "--learning_rate=0.1", "-job_name", "worker",
                       "--issync", "1", "-ps_hosts=p:1", "--worker_hosts",
                       "w0:1,w1:1", "data.csv", "--", "--job_name=ps"},
                      "");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->job_name, "worker");
  EXPECT_EQ(config->task_index, 0);  // the default
  EXPECT_TRUE(config->is_chief);     // worker 0, no chief job
  // The program's own flags, positional arguments and everything after "--"
  // stay, in order.
  EXPECT_THAT(config->remaining_args,
              ElementsAre("trainer", "--learning_rate=0.1", "--issync", "1",
                          "data.csv", "--", "--job_name=ps"));
}

TEST(TaskConfigTest, PsTaskIsNotChief) {
  auto config = ParseTaskConfig({"t", "--ps_hosts=p:1", "--worker_hosts=w:1",
                                 "--job_name=ps", "--task_index=0"},
                                "");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->job_name, "ps");
  EXPECT_FALSE(config->is_chief);
}

TEST(TaskConfigTest, FlagsWinOverTfConfig) {
  auto config = ParseTaskConfig(
      {"t", "--ps_hosts=p:1", "--worker_hosts=w:1", "--job_name=ps"},
      kKubeflow);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->job_name, "ps");
  EXPECT_FALSE(config->cluster.HasJob("chief"));
}

TEST(TaskConfigTest, FlagErrorsNameTheFlag) {
  const std::string ps = "--ps_hosts=p:1";
  const std::string workers = "--worker_hosts=w0:1,w1:1";
  struct Case {
    std::vector<std::string> args;
    const char* expected;
  };
  for (const Case& c : {
           Case{{"t", ps, workers, "--task_index=0"}, "--job_name is missing"},
           Case{{"t", ps, workers, "--job_name="}, "--job_name is missing"},
           Case{{"t", ps, workers, "--job_name=chief"},
                "--job_name=chief is not a job of the cluster, which has ps "
                "(1 task), worker (2 tasks)"},
           Case{{"t", ps, workers, "--job_name=worker", "--task_index=2"},
                "--task_index=2 is out of range for job 'worker', which has "
                "2 tasks"},
           Case{{"t", ps, workers, "--job_name=worker", "--task_index=-1"},
                "--task_index=-1 is out of range"},
           Case{{"t", ps, workers, "--job_name=worker", "--task_index=one"},
                "--task_index=one is not an integer"},
           Case{{"t", ps, workers, "--job_name"},
                "flag --job_name has no value"},
           Case{{"t", ps, workers, "--job_name", "--task_index=0"},
                "flag --job_name has no value"},
           Case{{"t", "--job_name=worker"}, "both empty"},
           Case{{"t", "--ps_hosts=p:1,,q:1", workers, "--job_name=ps"},
                "ps_hosts 'p:1,,q:1' has an empty entry"},
           Case{{"t", "--ps_hosts=p:99999", workers, "--job_name=ps"},
                "'p:99999'"},
           Case{{"t", "--ps_hosts=:1", workers, "--job_name=ps"},
                "the host is empty"},
           Case{{"t", "--ps_hosts=w0:1", workers, "--job_name=ps"},
                "'w0:1' is used twice"},
       }) {
    std::string msg = InvalidArgument(ParseTaskConfig(c.args, ""));
    EXPECT_THAT(msg, HasSubstr(c.expected));
  }
}

TEST(TaskConfigTest, NothingGiven) {
  EXPECT_THAT(InvalidArgument(ParseTaskConfig({"t", "--lr=1"}, "")),
              HasSubstr("no cluster given"));
}

TEST(TaskConfigTest, KubeflowWorkerWithChiefJob) {
  auto config = ParseTaskConfig({"t", "--lr=1"}, kKubeflow);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->job_name, "worker");
  EXPECT_EQ(config->task_index, 1);
  EXPECT_FALSE(config->is_chief);
  EXPECT_THAT(config->cluster.jobs(), ElementsAre("chief", "ps", "worker"));
  EXPECT_EQ(*config->cluster.TaskAddress("worker", 1), "w1:2222");
  EXPECT_THAT(config->remaining_args, ElementsAre("t", "--lr=1"));
}

TEST(TaskConfigTest, ChiefIsTheChiefTaskWhenTheClusterHasOne) {
  const std::string cluster =
      R"({"chief": ["c:1"], "worker": ["w0:1", "w1:1"], "ps": ["p:1"]})";
  auto chief =
      ParseTaskConfig({"t"}, R"({"cluster": )" + cluster +
                                 R"(, "task": {"type": "chief", "index": 0}})");
  ASSERT_TRUE(chief.ok()) << chief.status();
  EXPECT_TRUE(chief->is_chief);
  // With a chief job, worker 0 is an ordinary worker.
  auto worker0 = ParseTaskConfig(
      {"t"}, R"({"cluster": )" + cluster +
                 R"(, "task": {"type": "worker", "index": 0}})");
  ASSERT_TRUE(worker0.ok()) << worker0.status();
  EXPECT_FALSE(worker0->is_chief);
  // Without one, worker 0 is the chief.
  auto seed = ParseTaskConfig(
      {"t"},
      R"({"cluster": {"worker": ["w0:1"], "ps": ["p:1"]}, "task": {"type": "worker"}})");
  ASSERT_TRUE(seed.ok()) << seed.status();
  EXPECT_EQ(seed->task_index, 0);
  EXPECT_TRUE(seed->is_chief);
}

TEST(TaskConfigTest, EvaluatorOutsideTheCluster) {
  auto config = ParseTaskConfig(
      {"t"},
      R"({"cluster": {"chief": ["c:1"], "worker": ["w:1"], "ps": ["p:1"]},)"
      R"( "task": {"type": "evaluator", "index": 0}, "environment": "cloud"})");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->job_name, "evaluator");
  EXPECT_EQ(config->task_index, 0);
  EXPECT_FALSE(config->is_chief);
  EXPECT_FALSE(config->cluster.HasJob("evaluator"));
}

TEST(TaskConfigTest, IndexWrittenAsString) {
  auto config = ParseTaskConfig(
      {"t"},
      R"({"cluster": {"worker": ["w0:1", "w1:1"]}, "task": {"type": "worker", "index": "1"}})");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->task_index, 1);
}

TEST(TaskConfigTest, TfConfigErrorsNameTheField) {
  struct Case {
    const char* tf_config;
    const char* expected;
  };
  for (
      const Case& c : {
          Case{R"({"cluster": {"worker": ["w:1"]}, "task": )",
               "is not a JSON object"},
          Case{R"([1, 2])", "is not a JSON object"},
          Case{R"({"task": {"type": "worker", "index": 0}})",
               "TF_CONFIG has no \"cluster\""},
          Case{R"({"cluster": {}, "task": {"type": "worker"}})",
               "\"cluster\" has no jobs"},
          Case{R"({"cluster": ["w:1"], "task": {"type": "worker"}})",
               "TF_CONFIG's \"cluster\" must be a JSON object"},
          Case{
              R"({"cluster": {"worker": ["w:1", "w:1"]}, "task": {"type": "worker"}})",
              "'w:1' is used twice"},
          Case{R"({"cluster": {"worker": ["w"]}, "task": {"type": "worker"}})",
               "TF_CONFIG's \"cluster\": job 'worker' task 0"},
          Case{R"({"cluster": {"worker": ["w:1"]}})", "no \"task\" object"},
          Case{R"({"cluster": {"worker": ["w:1"]}, "task": {"index": 0}})",
               "no string \"type\""},
          Case{
              R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "trainer"}})",
              "task type 'trainer' is not a known role: use chief (or "
              "master), worker, ps or evaluator"},
          Case{
              R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": 1}})",
              "{\"type\": \"worker\", \"index\": 1} is not in the cluster, "
              "which has worker (1 task)"},
          Case{R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "ps"}})",
               "{\"type\": \"ps\", \"index\": 0} is not in the cluster"},
          Case{
              R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": -3}})",
              "is not in the cluster"},
          Case{
              R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": 0.5}})",
              "task index 0.5 is not an integer"},
          Case{
              R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "evaluator", "index": -1}})",
              "is not in the cluster"},
      }) {
    std::string msg = InvalidArgument(ParseTaskConfig({"t"}, c.tf_config));
    EXPECT_THAT(msg, HasSubstr(c.expected)) << c.tf_config;
  }
}

TEST(TaskConfigTest, ArgcArgvReadsTheEnvironment) {
  setenv("TF_CONFIG", kKubeflow, /*overwrite=*/1);
  std::string prog = "trainer";
  std::string flag = "--steps=10";
  char* argv[] = {prog.data(), flag.data()};
  auto config = ParseTaskConfig(2, argv);
  unsetenv("TF_CONFIG");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->job_name, "worker");
  EXPECT_EQ(config->task_index, 1);
  EXPECT_THAT(config->remaining_args, ElementsAre("trainer", "--steps=10"));
  EXPECT_FALSE(ParseTaskConfig(2, argv).ok());  // TF_CONFIG is gone
}

}  // namespace
}  // namespace distflow
