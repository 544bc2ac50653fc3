#include "tools/distflow/cluster_layout.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace distflow {
namespace tools {

int NumTasks(const LocalClusterOptions& options) {
  return options.ps + options.workers + (options.chief ? 1 : 0);
}

std::string ChiefTaskName(const LocalClusterOptions& options) {
  return options.chief ? "chief" : "worker0";
}

absl::StatusOr<std::vector<TaskSpec>> LayOutLocalCluster(
    const LocalClusterOptions& options, const std::vector<int>& ports) {
  if (options.program.empty()) {
    return absl::InvalidArgumentError(
        "no program to run: give it after --, as in distflow local --ps=1 "
        "--workers=2 -- ./build/bin/fashion_mnist");
  }
  if (options.ps < 0 || options.workers < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a cluster needs at least one worker and no negative count of ps "
        "tasks (got --ps=",
        options.ps, " --workers=", options.workers, ")"));
  }
  if (static_cast<int>(ports.size()) != NumTasks(options)) {
    return absl::InternalError(
        absl::StrCat("LayOutLocalCluster: ", ports.size(), " ports for ",
                     NumTasks(options), " tasks"));
  }
  std::vector<TaskSpec> tasks;
  auto add_job = [&](const std::string& job, int count) {
    for (int i = 0; i < count; ++i) {
      TaskSpec task;
      task.job = job;
      task.index = i;
      task.name = job == "chief" ? job : absl::StrCat(job, i);
      tasks.push_back(std::move(task));
    }
  };
  add_job("ps", options.ps);
  add_job("chief", options.chief ? 1 : 0);
  add_job("worker", options.workers);

  nlohmann::json cluster = nlohmann::json::object();
  std::vector<std::string> ps_hosts, worker_hosts;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const std::string address = absl::StrCat(options.host, ":", ports[i]);
    cluster[tasks[i].job].push_back(address);
    if (tasks[i].job == "ps") ps_hosts.push_back(address);
    if (tasks[i].job == "worker") worker_hosts.push_back(address);
  }
  for (TaskSpec& task : tasks) {
    task.argv = options.program;
    if (!options.chief) {
      task.argv.push_back("--job_name=" + task.job);
      task.argv.push_back(absl::StrCat("--task_index=", task.index));
      task.argv.push_back("--ps_hosts=" + absl::StrJoin(ps_hosts, ","));
      task.argv.push_back("--worker_hosts=" + absl::StrJoin(worker_hosts, ","));
    }
    nlohmann::json tf_config = {
        {"cluster", cluster},
        {"task", {{"type", task.job}, {"index", task.index}}}};
    task.env.emplace_back("TF_CONFIG", tf_config.dump());
    // Python tasks would otherwise hold their output back in a pipe.
    task.env.emplace_back("PYTHONUNBUFFERED", "1");
  }
  return tasks;
}

}  // namespace tools
}  // namespace distflow
