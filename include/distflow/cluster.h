// The cluster a distributed job runs on, and the task this process plays in it.
//
// A cluster is a set of jobs ("ps", "worker", optionally "chief" and
// "evaluator"), each an ordered list of task addresses ("host:port"). Task i of
// job "ps" has the device name prefix "/job:ps/replica:0/task:i". Every
// process of a job is given the same cluster and its own (job, task index).
#ifndef DISTFLOW_CLUSTER_H_
#define DISTFLOW_CLUSTER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace distflow {
namespace proto {
class ClusterDef;
}

class ClusterSpec {
 public:
  // The empty cluster (no jobs).
  ClusterSpec() = default;

  // A cluster from job name -> ordered task addresses. INVALID_ARGUMENT naming
  // the culprit for an empty job, a malformed job name (a letter, then
  // letters, digits or '_', as in device names) or address ("host:port" or
  // "[ipv6]:port", non-empty host, port 0..65535), or an address used twice.
  static absl::StatusOr<ClusterSpec> Create(
      const std::map<std::string, std::vector<std::string>>& jobs);
  // From the seeds' flags: comma-separated "host:port" lists (blanks around
  // entries are ignored). An empty list leaves its job out; an empty entry
  // ("a:1,,b:2") is an error.
  static absl::StatusOr<ClusterSpec> FromHostLists(
      const std::string& ps_hosts, const std::string& worker_hosts);
  // From JSON {"ps": ["h:1", ...], "worker": [...], ...} (TF_CONFIG's
  // "cluster" object). INVALID_ARGUMENT for malformed JSON or a job that is
  // not a list of strings, and for everything Create rejects.
  static absl::StatusOr<ClusterSpec> FromJson(const std::string& json);
  // The same JSON read from a file; NOT_FOUND naming the path if it cannot be
  // read.
  static absl::StatusOr<ClusterSpec> FromJsonFile(const std::string& path);
  // From the wire form; task indices must be dense (0..n-1).
  static absl::StatusOr<ClusterSpec> FromProto(const proto::ClusterDef& def);

  void ToProto(proto::ClusterDef* def) const;

  bool empty() const { return jobs_.empty(); }
  // Job names, sorted.
  std::vector<std::string> jobs() const;
  bool HasJob(const std::string& job) const;
  // Number of tasks of `job`; 0 if the cluster has no such job.
  int num_tasks(const std::string& job) const;
  // The addresses of `job`'s tasks in index order (empty if no such job).
  const std::vector<std::string>& tasks(const std::string& job) const;
  // The address of a task; INVALID_ARGUMENT naming the job and index and
  // listing the cluster's jobs (with their task counts) if there is no such
  // task.
  absl::StatusOr<std::string> TaskAddress(const std::string& job,
                                          int task_index) const;
  // "/job:<job>/replica:0/task:<i>" for every task, jobs sorted, tasks in
  // order.
  std::vector<std::string> TaskDeviceNames() const;
  // "ps (2 tasks), worker (1 task)", or "no jobs": for error messages.
  std::string JobSummary() const;
  // "ps: [a:1, b:2], worker: [c:3]"
  std::string DebugString() const;

  bool operator==(const ClusterSpec& o) const { return jobs_ == o.jobs_; }

 private:
  std::map<std::string, std::vector<std::string>> jobs_;
};

// What a process of a distributed job is: the cluster and its own task.
struct TaskConfig {
  ClusterSpec cluster;
  std::string job_name;  // "ps", "worker", "chief" or "evaluator"
  int task_index = 0;
  // True for the task that initializes and checkpoints: the "chief" task if the
  // cluster has a chief job, else worker 0.
  bool is_chief = false;
  // Flags that were not the cluster's, in order (argv[0] first), for the
  // program's own flag parsing.
  std::vector<std::string> remaining_args;

  // This task's device name prefix: "/job:<job_name>/replica:0/task:<index>".
  std::string TaskDevice() const;
};

// The environment variables ParseTaskConfig reads (TF_CONFIG, SLURM_*), by
// name.
using EnvironmentVariables = std::map<std::string, std::string>;

// Reads the task from the first of these that applies:
//  1. the seeds' flags (--job_name, --task_index, --ps_hosts, --worker_hosts;
//     "--flag=value", "--flag value", or with one dash);
//  2. --ps_count=N: a job started by Slurm's srun, one task per rank. The
//     cluster comes from SLURM_PROCID, SLURM_NTASKS, SLURM_JOB_NODELIST (or
//     SLURM_STEP_NODELIST) and SLURM_TASKS_PER_NODE: the first N ranks are the
//     ps tasks, the others the workers (worker 0 is the chief), and each task
//     listens on --port (default 2222) plus its index on its node;
//  3. the TF_CONFIG environment variable as Kubeflow's TFJob writes it:
//     {"cluster": {"chief": [...], "worker": [...], "ps": [...]},
//      "task": {"type": "worker", "index": 1}, "environment": "cloud"}.
//     Job names and the task type are read in any case ("Worker" is
//     "worker"), and "master" (TF 1.x's name, the TFJob's Master replica) is
//     the chief job. The task type must be chief, worker, ps or evaluator; an
//     evaluator need not be in the cluster (the operator leaves it out). A
//     "sparseCluster" (the TFJob's enableDynamicWorker) is refused: every
//     task needs the whole cluster.
// A process that Slurm started (SLURM_PROCID set) with none of these is told
// to pass --ps_count. The seeds' flags, --ps_count and --port (with
// --ps_count) are taken out; every other argument, and everything after a
// lone "--", is kept in remaining_args.
// With flags, the job must be in the cluster.
// INVALID_ARGUMENT naming the flag, variable or field at fault (a missing job
// name, an index out of range for its job, an unknown role, malformed JSON or
// Slurm variables, none of the three).
absl::StatusOr<TaskConfig> ParseTaskConfig(int argc, char** argv);
// As above, with the environment given.
absl::StatusOr<TaskConfig> ParseTaskConfig(const std::vector<std::string>& args,
                                           const EnvironmentVariables& env);
// As above, with TF_CONFIG's value given (empty: not set) and no Slurm
// variables.
absl::StatusOr<TaskConfig> ParseTaskConfig(const std::vector<std::string>& args,
                                           const std::string& tf_config);

}  // namespace distflow

#endif  // DISTFLOW_CLUSTER_H_
