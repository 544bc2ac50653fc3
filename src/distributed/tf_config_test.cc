// TF_CONFIG values as Kubeflow's TFJob operator writes them: Go's
// encoding/json output of its TFConfig struct, job names sorted, no blanks,
// addresses "<job>-<type>-<index>.<namespace>.svc:<port>".
#include "distributed/tf_config.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A TFJob "mnist" in namespace "kubeflow" with replica specs Chief: 1, PS: 1,
// Worker: 2, seen by Worker 1.
constexpr char kChiefJobWorker1[] =
    R"({"cluster":{"chief":["mnist-chief-0.kubeflow.svc:2222"],)"
    R"("ps":["mnist-ps-0.kubeflow.svc:2222"],)"
    R"("worker":["mnist-worker-0.kubeflow.svc:2222",)"
    R"("mnist-worker-1.kubeflow.svc:2222"]},)"
    R"("task":{"type":"worker","index":1},"environment":"cloud"})";

// The same job seen by its Chief.
constexpr char kChiefJobChief[] =
    R"({"cluster":{"chief":["mnist-chief-0.kubeflow.svc:2222"],)"
    R"("ps":["mnist-ps-0.kubeflow.svc:2222"],)"
    R"("worker":["mnist-worker-0.kubeflow.svc:2222",)"
    R"("mnist-worker-1.kubeflow.svc:2222"]},)"
    R"("task":{"type":"chief","index":0},"environment":"cloud"})";

// TF 1.x's layout, a TFJob with a Master replica (dist-mnist in "default",
// two PS, the cluster domain set through CUSTOM_CLUSTER_DOMAIN), seen by PS 1.
constexpr char kMasterJobPs1[] =
    R"({"cluster":{"master":["dist-mnist-master-0.default.svc.cluster.local:2222"],)"
    R"("ps":["dist-mnist-ps-0.default.svc.cluster.local:2222",)"
    R"("dist-mnist-ps-1.default.svc.cluster.local:2222"],)"
    R"("worker":["dist-mnist-worker-0.default.svc.cluster.local:2222"]},)"
    R"("task":{"type":"ps","index":1},"environment":"cloud"})";

// The same job seen by its Master.
constexpr char kMasterJobMaster[] =
    R"({"cluster":{"master":["dist-mnist-master-0.default.svc.cluster.local:2222"],)"
    R"("ps":["dist-mnist-ps-0.default.svc.cluster.local:2222",)"
    R"("dist-mnist-ps-1.default.svc.cluster.local:2222"],)"
    R"("worker":["dist-mnist-worker-0.default.svc.cluster.local:2222"]},)"
    R"("task":{"type":"master","index":0},"environment":"cloud"})";

// An Evaluator replica: the operator leaves the evaluator out of the cluster.
constexpr char kEvaluator[] =
    R"({"cluster":{"chief":["mnist-chief-0.kubeflow.svc:2222"],)"
    R"("ps":["mnist-ps-0.kubeflow.svc:2222"],)"
    R"("worker":["mnist-worker-0.kubeflow.svc:2222"]},)"
    R"("task":{"type":"evaluator","index":0},"environment":"cloud"})";

TEST(TfConfigTest, KubeflowWorkerOfAJobWithAChief) {
  auto config = TaskConfigFromTfConfig(kChiefJobWorker1);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->job_name, "worker");
  EXPECT_EQ(config->task_index, 1);
  EXPECT_FALSE(config->is_chief);
  EXPECT_THAT(config->cluster.jobs(), ElementsAre("chief", "ps", "worker"));
  EXPECT_THAT(config->cluster.tasks("worker"),
              ElementsAre("mnist-worker-0.kubeflow.svc:2222",
                          "mnist-worker-1.kubeflow.svc:2222"));
  EXPECT_EQ(config->TaskDevice(), "/job:worker/replica:0/task:1");
}

TEST(TfConfigTest, KubeflowChiefIsTheChief) {
  auto config = TaskConfigFromTfConfig(kChiefJobChief);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->job_name, "chief");
  EXPECT_TRUE(config->is_chief);
  // Worker 0 is not the chief when the cluster has a chief job.
  auto worker0 = TaskConfigFromTfConfig(
      R"({"cluster":{"chief":["c:2222"],"worker":["w:2222"]},)"
      R"("task":{"type":"worker","index":0},"environment":"cloud"})");
  ASSERT_TRUE(worker0.ok()) << worker0.status();
  EXPECT_FALSE(worker0->is_chief);
}

TEST(TfConfigTest, MasterReplicaIsTheChiefJob) {
  auto master = TaskConfigFromTfConfig(kMasterJobMaster);
  ASSERT_TRUE(master.ok()) << master.status();
  EXPECT_EQ(master->job_name, "chief");
  EXPECT_EQ(master->task_index, 0);
  EXPECT_TRUE(master->is_chief);
  EXPECT_THAT(master->cluster.jobs(), ElementsAre("chief", "ps", "worker"));
  EXPECT_THAT(
      master->cluster.tasks("chief"),
      ElementsAre("dist-mnist-master-0.default.svc.cluster.local:2222"));

  // Every task of the job sees the same cluster, with the master as chief.
  auto ps1 = TaskConfigFromTfConfig(kMasterJobPs1);
  ASSERT_TRUE(ps1.ok()) << ps1.status();
  EXPECT_EQ(ps1->job_name, "ps");
  EXPECT_EQ(ps1->task_index, 1);
  EXPECT_FALSE(ps1->is_chief);
  EXPECT_EQ(ps1->cluster, master->cluster);
}

TEST(TfConfigTest, EvaluatorOutsideTheCluster) {
  auto config = TaskConfigFromTfConfig(kEvaluator);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->job_name, "evaluator");
  EXPECT_EQ(config->task_index, 0);
  EXPECT_FALSE(config->is_chief);
  EXPECT_FALSE(config->cluster.HasJob("evaluator"));
}

TEST(TfConfigTest, ReplicaTypesInAnyCase) {
  // Hand-written configs sometimes keep the replica types' spelling.
  auto config = TaskConfigFromTfConfig(
      R"({"cluster": {"Master": ["m:2222"], "PS": ["p:2222"],)"
      R"( "Worker": ["w0:2222", "w1:2222"]},)"
      R"( "task": {"type": "Worker", "index": 1}})");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->job_name, "worker");
  EXPECT_EQ(config->task_index, 1);
  EXPECT_THAT(config->cluster.jobs(), ElementsAre("chief", "ps", "worker"));
  auto ps = TaskConfigFromTfConfig(
      R"({"cluster":{"PS":["p:2222"],"WORKER":["w:2222"]},)"
      R"("task":{"type":"PS","index":0}})");
  ASSERT_TRUE(ps.ok()) << ps.status();
  EXPECT_EQ(ps->job_name, "ps");
}

TEST(TfConfigTest, ErrorsNameTheField) {
  struct Case {
    std::string tf_config;
    std::string expected;
  };
  const Case cases[] = {
      {R"({"cluster":{"master":["m:1"],"chief":["c:1"]},)"
       R"("task":{"type":"chief","index":0}})",
       "both 'chief' and 'master'"},
      {R"({"cluster":{"worker":["a:1"],"Worker":["b:1"]},)"
       R"("task":{"type":"worker","index":0}})",
       "name the job 'worker'"},
      {R"({"sparseCluster":{"worker":{"1":"w1:2222"},"ps":["p:2222"]},)"
       R"("task":{"type":"worker","index":1}})",
       "enableDynamicWorker: false"},
      {R"({"cluster":{"worker":["w:1"]},"task":{"type":"trainer","index":0}})",
       "task type 'trainer' is not a known role"},
      {R"({"cluster":{"evaluator":["e:1"],"worker":["w:1"]},)"
       R"("task":{"type":"evaluator","index":1}})",
       R"({"type": "evaluator", "index": 1} is not in the cluster)"},
      {R"({"cluster":{"ps":["p:1"],"worker":["w:1"]},)"
       R"("task":{"type":"Master","index":0}})",
       R"({"type": "Master", "index": 0} is not in the cluster)"},
      {R"({"cluster":{"worker":["w:1"]},"task":{"type":"worker","index":"x"}})",
       "task index \"x\" is not an integer"},
      {R"({"cluster":["w:1"],"task":{"type":"worker"}})",
       "\"cluster\" must be a JSON object"},
  };
  for (const Case& c : cases) {
    auto config = TaskConfigFromTfConfig(c.tf_config);
    ASSERT_FALSE(config.ok()) << c.tf_config;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(config.status().message(), HasSubstr(c.expected))
        << c.tf_config;
  }
}

TEST(TfConfigTest, ParseTaskConfigReadsTfConfigFromTheEnvironment) {
  auto config =
      ParseTaskConfig({"trainer", "--issync=1"},
                      EnvironmentVariables{{"TF_CONFIG", kMasterJobMaster}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->job_name, "chief");
  EXPECT_THAT(config->remaining_args, ElementsAre("trainer", "--issync=1"));
}

}  // namespace
}  // namespace distflow
