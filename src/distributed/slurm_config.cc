#include "distributed/slurm_config.h"

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "distributed/slurm_hostlist.h"

namespace distflow {
namespace {

// A variable that is set, with its name for error messages.
struct Variable {
  std::string name;
  std::string value;
};

// The first of `names` that `env` sets (to something non-empty).
std::optional<Variable> FirstSet(const EnvironmentVariables& env,
                                 std::initializer_list<const char*> names) {
  for (const char* name : names) {
    auto it = env.find(name);
    if (it != env.end() && !it->second.empty()) {
      return Variable{name, it->second};
    }
  }
  return std::nullopt;
}

absl::Status Malformed(const Variable& v, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(v.name, "='", v.value, "' ", why));
}

absl::StatusOr<int> NonNegativeInt(const Variable& v) {
  int n = 0;
  if (!absl::SimpleAtoi(v.value, &n) || n < 0) {
    return Malformed(v, "is not a non-negative integer");
  }
  return n;
}

// How many tasks each node runs, in node order.
absl::StatusOr<std::vector<int>> TasksPerNode(const EnvironmentVariables& env,
                                              const Variable& nodelist,
                                              int num_nodes,
                                              const Variable& ntasks,
                                              int num_tasks) {
  std::vector<int> counts;
  std::string source;
  if (auto list = FirstSet(
          env, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"})) {
    auto expanded = ExpandSlurmTaskCounts(list->value);
    if (!expanded.ok()) return Malformed(*list, expanded.status().message());
    counts = *std::move(expanded);
    source = absl::StrCat(list->name, "='", list->value, "'");
  } else if (auto per_node = FirstSet(env, {"SLURM_NTASKS_PER_NODE"})) {
    int n = 0;
    if (!absl::SimpleAtoi(per_node->value, &n) || n <= 0) {
      return Malformed(*per_node, "is not a positive integer");
    }
    counts.assign(num_nodes, n);
    source = absl::StrCat(per_node->name, "=", n);
  } else {
    if (num_tasks % num_nodes != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          ntasks.name, "=", num_tasks, " tasks do not spread evenly over the ",
          num_nodes, " nodes of ", nodelist.name,
          ", and neither SLURM_TASKS_PER_NODE nor SLURM_NTASKS_PER_NODE says "
          "how many each runs: set SLURM_TASKS_PER_NODE (srun does)"));
    }
    counts.assign(num_nodes, num_tasks / num_nodes);
    source = "an even spread";
  }
  if (static_cast<int>(counts.size()) != num_nodes) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, " gives task counts for ", counts.size(), " nodes, but ",
        nodelist.name, "='", nodelist.value, "' has ", num_nodes));
  }
  int64_t total = 0;
  for (int c : counts) total += c;
  if (total != num_tasks) {
    return absl::InvalidArgumentError(absl::StrCat(source, " places ", total,
                                                   " tasks, but ", ntasks.name,
                                                   "=", num_tasks));
  }
  return counts;
}

// Checks the node and local index Slurm gave this task against the block
// layout we derived, so that another distribution fails here instead of
// giving tasks clusters that disagree.
absl::Status CheckPlacement(const EnvironmentVariables& env, int rank, int node,
                            int local) {
  for (auto [name, expected] :
       {std::pair<const char*, int>{"SLURM_NODEID", node},
        std::pair<const char*, int>{"SLURM_LOCALID", local}}) {
    auto v = FirstSet(env, {name});
    if (!v) continue;
    auto actual = NonNegativeInt(*v);
    if (!actual.ok()) return actual.status();
    if (*actual != expected) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, "=", *actual, " for SLURM_PROCID=", rank, ", but srun's block ",
          "distribution puts that rank at ", name, "=", expected,
          ": launch with srun --distribution=block (the default)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TaskConfig> TaskConfigFromSlurm(const EnvironmentVariables& env,
                                               int ps_count, int base_port) {
  auto procid = FirstSet(env, {"SLURM_PROCID"});
  auto ntasks =
      FirstSet(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"});
  auto nodelist = FirstSet(
      env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"});
  if (!procid || !ntasks || !nodelist) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--ps_count reads the cluster from Slurm, but ",
        !procid   ? "SLURM_PROCID"
        : !ntasks ? "SLURM_NTASKS"
                  : "SLURM_JOB_NODELIST",
        " is not set: start every task with srun (inside sbatch or salloc), "
        "or give the cluster with --ps_hosts, --worker_hosts, --job_name and "
        "--task_index"));
  }
  auto rank = NonNegativeInt(*procid);
  if (!rank.ok()) return rank.status();
  auto num_tasks = NonNegativeInt(*ntasks);
  if (!num_tasks.ok()) return num_tasks.status();
  if (*rank >= *num_tasks) {
    return Malformed(
        *procid, absl::StrCat("is not below ", ntasks->name, "=", *num_tasks));
  }
  if (ps_count < 0 || ps_count >= *num_tasks) {
    return absl::InvalidArgumentError(
        absl::StrCat("--ps_count=", ps_count, " must be 0..", *num_tasks - 1,
                     ": the job has ", *num_tasks, " tasks (", ntasks->name,
                     ") and needs at least one worker"));
  }
  if (base_port <= 0 || base_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--port=", base_port, " is not a port: pass 1..65535"));
  }
  auto nodes = ExpandSlurmHostlist(nodelist->value);
  if (!nodes.ok()) return Malformed(*nodelist, nodes.status().message());
  auto counts = TasksPerNode(env, *nodelist, static_cast<int>(nodes->size()),
                             *ntasks, *num_tasks);
  if (!counts.ok()) return counts.status();

  // Ranks fill the nodes in order; a node's tasks take consecutive ports.
  std::vector<std::string> addresses;
  int my_node = 0, my_local = 0;
  for (size_t node = 0; node < nodes->size(); ++node) {
    const int tasks = (*counts)[node];
    if (base_port + tasks - 1 > 65535) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--port=", base_port, " leaves no port for the ", tasks,
          " tasks of node ", (*nodes)[node], ": pass a lower --port"));
    }
    for (int local = 0; local < tasks; ++local) {
      if (static_cast<int>(addresses.size()) == *rank) {
        my_node = static_cast<int>(node);
        my_local = local;
      }
      addresses.push_back(absl::StrCat((*nodes)[node], ":", base_port + local));
    }
  }
  if (absl::Status s = CheckPlacement(env, *rank, my_node, my_local); !s.ok()) {
    return s;
  }

  std::map<std::string, std::vector<std::string>> jobs;
  if (ps_count > 0) {
    jobs["ps"].assign(addresses.begin(), addresses.begin() + ps_count);
  }
  jobs["worker"].assign(addresses.begin() + ps_count, addresses.end());
  auto cluster = ClusterSpec::Create(jobs);
  if (!cluster.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the cluster from ", nodelist->name, "='", nodelist->value,
                     "': ", cluster.status().message()));
  }
  TaskConfig config;
  config.cluster = *std::move(cluster);
  config.job_name = *rank < ps_count ? "ps" : "worker";
  config.task_index = *rank < ps_count ? *rank : *rank - ps_count;
  config.is_chief = config.job_name == "worker" && config.task_index == 0;
  return config;
}

}  // namespace distflow
