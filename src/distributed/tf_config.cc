#include "distributed/tf_config.h"

#include <cstdint>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "distributed/cluster_spec_internal.h"
#include "nlohmann/json.hpp"

namespace distflow {
namespace {

// The job a TF_CONFIG role stands for. The TFJob operator writes its replica
// types lowercased ("Worker" -> "worker"), hand-written configs sometimes
// keep the case, and TF 1.x called the chief "master".
std::string CanonicalJob(absl::string_view role) {
  std::string job = absl::AsciiStrToLower(role);
  return job == "master" ? "chief" : job;
}

// TF_CONFIG's cluster with every job renamed to its canonical name; two keys
// naming the same job ("master" and "chief") are an error.
absl::StatusOr<nlohmann::json> CanonicalCluster(const nlohmann::json& cluster) {
  // Not an object: left for ClusterSpecFromJsonValue to report.
  if (!cluster.is_object()) return cluster;
  nlohmann::json out = nlohmann::json::object();
  std::map<std::string, std::string> key_of_job;
  for (const auto& [key, tasks] : cluster.items()) {
    const std::string job = CanonicalJob(key);
    auto [it, inserted] = key_of_job.emplace(job, key);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TF_CONFIG's \"cluster\" has both '", it->second, "' and '", key,
          "', which both name the job '", job, "': keep one"));
    }
    out[job] = tasks;
  }
  return out;
}

absl::StatusOr<int> TaskIndex(const nlohmann::json& task) {
  if (!task.contains("index")) return 0;
  const nlohmann::json& index = task["index"];
  // Some launchers write the index as a string ("1").
  if (index.is_number_integer()) {
    const int64_t v = index.get<int64_t>();
    if (v < -(1 << 30) || v > (1 << 30)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TF_CONFIG's task index ", v, " is out of range: write 0, 1, ..."));
    }
    return static_cast<int>(v);
  }
  int value = 0;
  if (!index.is_string() ||
      !absl::SimpleAtoi(index.get<std::string>(), &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("TF_CONFIG's task index ", index.dump(),
                     " is not an integer: write \"index\": 0"));
  }
  return value;
}

}  // namespace

absl::StatusOr<TaskConfig> TaskConfigFromTfConfig(
    const std::string& tf_config) {
  const nlohmann::json root =
      nlohmann::json::parse(tf_config, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TF_CONFIG '", tf_config,
        "' is not a JSON object: expected {\"cluster\": {\"worker\": "
        "[\"host:port\", ...], ...}, \"task\": {\"type\": \"worker\", "
        "\"index\": 0}}"));
  }
  if (!root.contains("cluster") && root.contains("sparseCluster")) {
    return absl::InvalidArgumentError(
        "TF_CONFIG has a \"sparseCluster\" (a TFJob with enableDynamicWorker: "
        "true), which lists only part of the cluster; every distflow task "
        "needs all of it: set enableDynamicWorker: false");
  }
  if (!root.contains("cluster")) {
    return absl::InvalidArgumentError(
        "TF_CONFIG has no \"cluster\": add {\"cluster\": {\"worker\": "
        "[\"host:port\", ...], ...}}");
  }
  auto cluster_json = CanonicalCluster(root["cluster"]);
  if (!cluster_json.ok()) return cluster_json.status();
  auto cluster =
      ClusterSpecFromJsonValue(*cluster_json, "TF_CONFIG's \"cluster\"");
  if (!cluster.ok()) return cluster.status();
  TaskConfig config;
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
  const std::string type = task["type"].get<std::string>();
  config.job_name = CanonicalJob(type);
  if (config.job_name != "chief" && config.job_name != "worker" &&
      config.job_name != "ps" && config.job_name != "evaluator") {
    return absl::InvalidArgumentError(absl::StrCat(
        "TF_CONFIG's task type '", type,
        "' is not a known role: use chief (or master), worker, ps or "
        "evaluator"));
  }
  auto index = TaskIndex(task);
  if (!index.ok()) return index.status();
  config.task_index = *index;
  const int n = config.cluster.num_tasks(config.job_name);
  // The operator leaves evaluators out of the cluster: they run beside it.
  const bool unlisted_evaluator = config.job_name == "evaluator" && n == 0;
  if (config.task_index < 0 ||
      (!unlisted_evaluator && config.task_index >= n)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TF_CONFIG's task {\"type\": \"", type, "\", \"index\": ",
        config.task_index, "} is not in the cluster, which has ",
        config.cluster.JobSummary(), ": fix the task or the cluster"));
  }
  config.is_chief =
      IsChiefTask(config.cluster, config.job_name, config.task_index);
  return config;
}

}  // namespace distflow
