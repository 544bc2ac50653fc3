#include <cstdlib>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "distflow/cluster.h"
#include "distributed/cluster_spec_internal.h"
#include "nlohmann/json.hpp"

namespace distflow {
namespace {

constexpr const char* kClusterFlags[] = {"job_name", "task_index", "ps_hosts",
                                         "worker_hosts"};

bool IsClusterFlag(absl::string_view name) {
  for (const char* flag : kClusterFlags) {
    if (name == flag) return true;
  }
  return false;
}

// Chief: the "chief" task if the cluster has that job (TF 2 / Kubeflow
// layouts), else worker 0 (the seeds' layout).
bool IsChief(const ClusterSpec& cluster, const std::string& job, int index) {
  if (cluster.HasJob("chief")) return job == "chief" && index == 0;
  return job == "worker" && index == 0;
}

// The cluster flags found in `args`, and everything else in order.
struct SplitArgs {
  std::map<std::string, std::string> flags;
  std::vector<std::string> rest;
};

absl::StatusOr<SplitArgs> SplitFlags(const std::vector<std::string>& args) {
  SplitArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (i == 0 || arg == "--") {
      // argv[0], or the end of flags: the rest belongs to the program.
      if (i != 0) {
        out.rest.insert(out.rest.end(), args.begin() + i, args.end());
        break;
      }
      out.rest.push_back(arg);
      continue;
    }
    absl::string_view body = arg;
    if (absl::StartsWith(body, "--")) {
      body.remove_prefix(2);
    } else if (absl::StartsWith(body, "-")) {
      body.remove_prefix(1);
    } else {
      out.rest.push_back(arg);
      continue;
    }
    const size_t eq = body.find('=');
    const std::string name(body.substr(0, eq));
    if (!IsClusterFlag(name)) {
      out.rest.push_back(arg);
      continue;
    }
    std::string value;
    if (eq != absl::string_view::npos) {
      value = std::string(body.substr(eq + 1));
    } else if (i + 1 < args.size() && !absl::StartsWith(args[i + 1], "--")) {
      value = args[++i];
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("flag --", name, " has no value: write --", name,
                       "=VALUE or --", name, " VALUE"));
    }
    out.flags[name] = value;
  }
  return out;
}

absl::StatusOr<TaskConfig> FromFlags(const SplitArgs& split) {
  auto flag = [&](const char* name) -> std::string {
    auto it = split.flags.find(name);
    return it == split.flags.end() ? "" : it->second;
  };
  TaskConfig config;
  config.remaining_args = split.rest;
  auto cluster =
      ClusterSpec::FromHostLists(flag("ps_hosts"), flag("worker_hosts"));
  if (!cluster.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--ps_hosts/--worker_hosts: ", cluster.status().message()));
  }
  config.cluster = *std::move(cluster);
  if (config.cluster.empty()) {
    return absl::InvalidArgumentError(
        "--ps_hosts and --worker_hosts are both empty: give the cluster, such "
        "as --ps_hosts=ps0:2222 --worker_hosts=w0:2222,w1:2222");
  }
  config.job_name = flag("job_name");
  if (config.job_name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--job_name is missing: pass --job_name=ps or --job_name=worker "
        "(the cluster has ",
        config.cluster.JobSummary(), ")"));
  }
  if (!config.cluster.HasJob(config.job_name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--job_name=", config.job_name,
        " is not a job of the cluster, which has ", config.cluster.JobSummary(),
        ": pass one of those (and its hosts with --ps_hosts/--worker_hosts)"));
  }
  const std::string index = flag("task_index");
  if (!index.empty() && !absl::SimpleAtoi(index, &config.task_index)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--task_index=", index, " is not an integer: pass 0, 1, ..."));
  }
  const int n = config.cluster.num_tasks(config.job_name);
  if (config.task_index < 0 || config.task_index >= n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--task_index=", config.task_index, " is out of range for job '",
        config.job_name, "', which has ", n, n == 1 ? " task" : " tasks",
        ": pass 0..", n - 1));
  }
  config.is_chief = IsChief(config.cluster, config.job_name, config.task_index);
  return config;
}

absl::StatusOr<TaskConfig> FromTfConfig(const std::string& tf_config,
                                        std::vector<std::string> rest) {
  const nlohmann::json root =
      nlohmann::json::parse(tf_config, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TF_CONFIG '", tf_config,
        "' is not a JSON object: expected {\"cluster\": {\"worker\": "
        "[\"host:port\", ...], ...}, \"task\": {\"type\": \"worker\", "
        "\"index\": 0}}"));
  }
  TaskConfig config;
  config.remaining_args = std::move(rest);
  if (!root.contains("cluster")) {
    return absl::InvalidArgumentError(
        "TF_CONFIG has no \"cluster\": add {\"cluster\": {\"worker\": "
        "[\"host:port\", ...], ...}}");
  }
  auto cluster =
      ClusterSpecFromJsonValue(root["cluster"], "TF_CONFIG's \"cluster\"");
  if (!cluster.ok()) return cluster.status();
  config.cluster = *std::move(cluster);
  if (config.cluster.empty()) {
    return absl::InvalidArgumentError(
        "TF_CONFIG's \"cluster\" has no jobs: list the tasks of each job");
  }

  if (!root.contains("task") || !root["task"].is_object()) {
    return absl::InvalidArgumentError(
        "TF_CONFIG has no \"task\" object: add \"task\": {\"type\": "
        "\"worker\", \"index\": 0}");
  }
  const nlohmann::json& task = root["task"];
  if (!task.contains("type") || !task["type"].is_string()) {
    return absl::InvalidArgumentError(
        "TF_CONFIG's \"task\" has no string \"type\": set it to chief, "
        "worker, ps or evaluator");
  }
  config.job_name = task["type"].get<std::string>();
  if (config.job_name != "chief" && config.job_name != "worker" &&
      config.job_name != "ps" && config.job_name != "evaluator") {
    return absl::InvalidArgumentError(absl::StrCat(
        "TF_CONFIG's task type '", config.job_name,
        "' is not a known role: use chief, worker, ps or evaluator"));
  }
  if (task.contains("index")) {
    const nlohmann::json& index = task["index"];
    // Some launchers write the index as a string ("1").
    if (index.is_number_integer()) {
      const int64_t v = index.get<int64_t>();
      if (v < -(1 << 30) || v > (1 << 30)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "TF_CONFIG's task index ", v, " is out of range: write 0, 1, ..."));
      }
      config.task_index = static_cast<int>(v);
    } else if (!index.is_string() || !absl::SimpleAtoi(index.get<std::string>(),
                                                       &config.task_index)) {
      return absl::InvalidArgumentError(
          absl::StrCat("TF_CONFIG's task index ", index.dump(),
                       " is not an integer: write \"index\": 0"));
    }
  }
  const int n = config.cluster.num_tasks(config.job_name);
  // An evaluator usually runs beside the cluster and is not listed in it.
  const bool unlisted_evaluator = config.job_name == "evaluator" && n == 0;
  if (config.task_index < 0 ||
      (!unlisted_evaluator && config.task_index >= n)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TF_CONFIG's task {\"type\": \"", config.job_name, "\", \"index\": ",
        config.task_index, "} is not in the cluster, which has ",
        config.cluster.JobSummary(), ": fix the task or the cluster"));
  }
  config.is_chief = IsChief(config.cluster, config.job_name, config.task_index);
  return config;
}

}  // namespace

std::string TaskConfig::TaskDevice() const {
  return absl::StrCat("/job:", job_name, "/replica:0/task:", task_index);
}

absl::StatusOr<TaskConfig> ParseTaskConfig(const std::vector<std::string>& args,
                                           const std::string& tf_config) {
  auto split = SplitFlags(args);
  if (!split.ok()) return split.status();
  if (!split->flags.empty()) return FromFlags(*split);
  if (!tf_config.empty())
    return FromTfConfig(tf_config, std::move(split->rest));
  return absl::InvalidArgumentError(
      "no cluster given: pass --job_name, --task_index, --ps_hosts and "
      "--worker_hosts, or set the TF_CONFIG environment variable");
}

absl::StatusOr<TaskConfig> ParseTaskConfig(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  const char* tf_config = std::getenv("TF_CONFIG");
  return ParseTaskConfig(args, tf_config == nullptr ? "" : tf_config);
}

}  // namespace distflow
