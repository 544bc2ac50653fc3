#include <cstdlib>
#include <initializer_list>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "distflow/cluster.h"
#include "distributed/cluster_spec_internal.h"
#include "distributed/slurm_config.h"
#include "distributed/tf_config.h"

extern char** environ;

namespace distflow {
namespace {

using FlagNames = std::initializer_list<absl::string_view>;

// The seeds' flags, which give the cluster and the task outright.
constexpr FlagNames kSeedFlags = {"job_name", "task_index", "ps_hosts",
                                  "worker_hosts"};
// The flags of a job that Slurm started: the cluster comes from its variables.
constexpr FlagNames kSlurmFlags = {"ps_count", "port"};

bool Contains(FlagNames names, absl::string_view name) {
  for (absl::string_view n : names) {
    if (n == name) return true;
  }
  return false;
}

// The name of the flag `arg` ("--name=v", "--name", "-name"), or nullopt if it
// is not a flag.
std::optional<absl::string_view> FlagName(absl::string_view arg) {
  if (absl::StartsWith(arg, "--")) {
    arg.remove_prefix(2);
  } else if (absl::StartsWith(arg, "-")) {
    arg.remove_prefix(1);
  } else {
    return std::nullopt;
  }
  return arg.substr(0, arg.find('='));
}

// Whether one of `names` is among the flags of `args` (before a lone "--").
bool HasFlag(const std::vector<std::string>& args, FlagNames names) {
  for (size_t i = 1; i < args.size() && args[i] != "--"; ++i) {
    auto name = FlagName(args[i]);
    if (name && Contains(names, *name)) return true;
  }
  return false;
}

// The flags of `names` found in `args`, and everything else in order.
struct SplitArgs {
  std::map<std::string, std::string> flags;
  std::vector<std::string> rest;
};

absl::StatusOr<SplitArgs> SplitFlags(const std::vector<std::string>& args,
                                     FlagNames names) {
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
    const std::optional<absl::string_view> flag = FlagName(arg);
    if (!flag || !Contains(names, *flag)) {
      out.rest.push_back(arg);
      continue;
    }
    const std::string name(*flag);
    const size_t eq = arg.find('=');
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
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
  config.is_chief =
      IsChiefTask(config.cluster, config.job_name, config.task_index);
  return config;
}

absl::StatusOr<int> IntFlag(const SplitArgs& split, const char* name,
                            int default_value) {
  auto it = split.flags.find(name);
  if (it == split.flags.end()) return default_value;
  int value = 0;
  if (!absl::SimpleAtoi(it->second, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, "=", it->second, " is not an integer"));
  }
  return value;
}

absl::StatusOr<TaskConfig> FromSlurm(const SplitArgs& split,
                                     const EnvironmentVariables& env) {
  auto ps_count = IntFlag(split, "ps_count", 0);
  if (!ps_count.ok()) return ps_count.status();
  auto port = IntFlag(split, "port", kDefaultSlurmBasePort);
  if (!port.ok()) return port.status();
  auto config = TaskConfigFromSlurm(env, *ps_count, *port);
  if (!config.ok()) return config.status();
  config->remaining_args = split.rest;
  return config;
}

std::string EnvValue(const EnvironmentVariables& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

}  // namespace

std::string TaskConfig::TaskDevice() const {
  return absl::StrCat("/job:", job_name, "/replica:0/task:", task_index);
}

absl::StatusOr<TaskConfig> ParseTaskConfig(const std::vector<std::string>& args,
                                           const EnvironmentVariables& env) {
  const bool seed_flags = HasFlag(args, kSeedFlags);
  const bool slurm = HasFlag(args, {"ps_count"});
  if (seed_flags && slurm) {
    return absl::InvalidArgumentError(
        "--ps_count (the cluster from Slurm) and --job_name/--task_index/"
        "--ps_hosts/--worker_hosts (the cluster given) were both passed: "
        "keep one way");
  }
  if (seed_flags) {
    auto split = SplitFlags(args, kSeedFlags);
    if (!split.ok()) return split.status();
    return FromFlags(*split);
  }
  if (slurm) {
    auto split = SplitFlags(args, kSlurmFlags);
    if (!split.ok()) return split.status();
    return FromSlurm(*split, env);
  }
  const std::string tf_config = EnvValue(env, "TF_CONFIG");
  if (!tf_config.empty()) {
    auto config = TaskConfigFromTfConfig(tf_config);
    if (config.ok()) config->remaining_args = args;
    return config;
  }
  const std::string procid = EnvValue(env, "SLURM_PROCID");
  if (!procid.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "this task was started by Slurm (SLURM_PROCID=", procid,
        ") but no --ps_count was passed: pass --ps_count=N to make the first "
        "N ranks ps tasks and the rest workers"));
  }
  return absl::InvalidArgumentError(
      "no cluster given: pass --job_name, --task_index, --ps_hosts and "
      "--worker_hosts, or set the TF_CONFIG environment variable, or start "
      "the tasks with Slurm's srun and pass --ps_count");
}

absl::StatusOr<TaskConfig> ParseTaskConfig(const std::vector<std::string>& args,
                                           const std::string& tf_config) {
  EnvironmentVariables env;
  if (!tf_config.empty()) env["TF_CONFIG"] = tf_config;
  return ParseTaskConfig(args, env);
}

absl::StatusOr<TaskConfig> ParseTaskConfig(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  // Only the variables a cluster can come from.
  EnvironmentVariables env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    absl::string_view var = *entry;
    const size_t eq = var.find('=');
    if (eq == absl::string_view::npos) continue;
    const absl::string_view name = var.substr(0, eq);
    if (name == "TF_CONFIG" || absl::StartsWith(name, "SLURM_")) {
      env.emplace(std::string(name), std::string(var.substr(eq + 1)));
    }
  }
  return ParseTaskConfig(args, env);
}

}  // namespace distflow
