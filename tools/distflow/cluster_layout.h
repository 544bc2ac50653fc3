// The tasks of a cluster on one machine: which processes `distflow local`
// starts, with which flags and which TF_CONFIG.
#ifndef DISTFLOW_TOOLS_DISTFLOW_CLUSTER_LAYOUT_H_
#define DISTFLOW_TOOLS_DISTFLOW_CLUSTER_LAYOUT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace distflow {
namespace tools {

struct LocalClusterOptions {
  int ps = 1;
  int workers = 1;
  // Adds a "chief" job of one task (TensorFlow 2 and Kubeflow layouts).
  bool chief = false;
  std::string host = "127.0.0.1";
  // The program and its own arguments, run by every task.
  std::vector<std::string> program;
};

struct TaskSpec {
  std::string job;  // "ps", "chief" or "worker"
  int index = 0;
  std::string name;  // "ps0", "chief", "worker1": the prefix of its output
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
};

// One TaskSpec per task, ps tasks first (they serve the others), then the
// chief, then the workers. Every task runs the program with its arguments
// and the environment variable TF_CONFIG ({"cluster": {...}, "task":
// {"type": ..., "index": ...}}). Without a chief job, the seeds' flags
// --job_name, --task_index, --ps_hosts and --worker_hosts follow the
// program's arguments too; with one they do not, since --ps_hosts and
// --worker_hosts cannot describe a chief job (and a program given both
// reads the flags). `ports` holds one port per task, in the order returned.
absl::StatusOr<std::vector<TaskSpec>> LayOutLocalCluster(
    const LocalClusterOptions& options, const std::vector<int>& ports);

// The number of tasks LayOutLocalCluster makes.
int NumTasks(const LocalClusterOptions& options);

// The task whose exit status is the job's and whose progress is shown: the
// chief, or worker 0 without a chief job.
std::string ChiefTaskName(const LocalClusterOptions& options);

}  // namespace tools
}  // namespace distflow

#endif  // DISTFLOW_TOOLS_DISTFLOW_CLUSTER_LAYOUT_H_
