#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "distflow/cluster.h"
#include "distributed/cluster_spec_internal.h"
#include "nlohmann/json.hpp"
#include "proto/cluster.pb.h"

namespace distflow {

bool IsValidJobName(absl::string_view name) {
  // The same rule as a device name's job field, so that every job can be
  // addressed as "/job:<name>".
  if (name.empty() || !absl::ascii_isalpha(static_cast<unsigned char>(name[0])))
    return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_')
      return false;
  }
  return true;
}

absl::Status ValidateAddress(absl::string_view address) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("task address '", address, "' is malformed: ", why,
                     "; expected \"host:port\" such as \"ps0:2222\", "
                     "\"10.0.0.1:2222\" or \"[::1]:2222\""));
  };
  absl::string_view host;
  absl::string_view port;
  if (!address.empty() && address[0] == '[') {
    // An IPv6 literal: "[::1]:2222".
    const size_t close = address.find(']');
    if (close == absl::string_view::npos) return bad("no ']' after '['");
    host = address.substr(1, close - 1);
    if (close + 1 >= address.size() || address[close + 1] != ':')
      return bad("no ':port' after ']'");
    port = address.substr(close + 2);
  } else {
    const size_t colon = address.rfind(':');
    if (colon == absl::string_view::npos) return bad("no ':port'");
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.find(':') != absl::string_view::npos)
      return bad("an IPv6 host must be written in brackets");
  }
  if (host.empty()) return bad("the host is empty");
  for (char c : host) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c)) || c == '/' ||
        c == ',') {
      return bad(absl::StrCat("the host contains '", std::string(1, c), "'"));
    }
  }
  if (port.empty()) return bad("the port is empty");
  for (char c : port) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c)))
      return bad(absl::StrCat("the port '", port, "' is not a number"));
  }
  int value = 0;
  if (port.size() > 5 || !absl::SimpleAtoi(port, &value) || value > 65535)
    return bad(absl::StrCat("the port ", port, " is out of range 0..65535"));
  return absl::OkStatus();
}

absl::StatusOr<ClusterSpec> ClusterSpec::Create(
    const std::map<std::string, std::vector<std::string>>& jobs) {
  std::map<std::string, std::string> owner;  // address -> "job task i"
  for (const auto& [job, tasks] : jobs) {
    if (!IsValidJobName(job)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "job name '", job,
          "' is malformed: use a letter, then letters, digits or '_' (such "
          "as ps, worker, chief)"));
    }
    if (tasks.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("job '", job,
                       "' has no tasks: give it at least one \"host:port\" "
                       "or leave the job out"));
    }
    for (size_t i = 0; i < tasks.size(); ++i) {
      const std::string where = absl::StrCat("job '", job, "' task ", i);
      absl::Status s = ValidateAddress(tasks[i]);
      if (!s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": ", s.message()));
      }
      auto [it, inserted] = owner.emplace(tasks[i], where);
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat(
            "task address '", tasks[i], "' is used twice, by ", it->second,
            " and by ", where, ": every task needs its own host:port"));
      }
    }
  }
  ClusterSpec spec;
  spec.jobs_ = jobs;
  return spec;
}

absl::StatusOr<ClusterSpec> ClusterSpec::FromHostLists(
    const std::string& ps_hosts, const std::string& worker_hosts) {
  std::map<std::string, std::vector<std::string>> jobs;
  for (const auto& [job, list] :
       {std::pair<std::string, const std::string*>{"ps", &ps_hosts},
        std::pair<std::string, const std::string*>{"worker", &worker_hosts}}) {
    if (absl::StripAsciiWhitespace(*list).empty()) continue;
    std::vector<std::string> tasks;
    for (absl::string_view entry : absl::StrSplit(*list, ',')) {
      entry = absl::StripAsciiWhitespace(entry);
      if (entry.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(job, "_hosts '", *list,
                         "' has an empty entry (at position ", tasks.size(),
                         "): write \"host:port,host:port\" without empty "
                         "items"));
      }
      tasks.emplace_back(entry);
    }
    jobs[job] = std::move(tasks);
  }
  return Create(jobs);
}

absl::StatusOr<ClusterSpec> ClusterSpecFromJsonValue(
    const nlohmann::json& cluster, absl::string_view what) {
  if (!cluster.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what,
        " must be a JSON object {\"job\": [\"host:port\", ...], ...}, "
        "not ",
        cluster.type_name()));
  }
  std::map<std::string, std::vector<std::string>> jobs;
  for (const auto& [job, tasks] : cluster.items()) {
    if (!tasks.is_array()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": job '", job,
                       "' must be a list of \"host:port\" strings, not ",
                       tasks.type_name()));
    }
    std::vector<std::string> addresses;
    for (const auto& task : tasks) {
      if (!task.is_string()) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": job '", job, "' task ", addresses.size(),
            " must be a \"host:port\" string, not ", task.type_name()));
      }
      addresses.push_back(task.get<std::string>());
    }
    jobs[job] = std::move(addresses);
  }
  auto spec = ClusterSpec::Create(jobs);
  if (!spec.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", spec.status().message()));
  }
  return spec;
}

absl::StatusOr<ClusterSpec> ClusterSpec::FromJson(const std::string& json) {
  nlohmann::json value = nlohmann::json::parse(json, nullptr,
                                               /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster JSON '", json,
                     "' is malformed: expected {\"ps\": [\"host:port\", ...], "
                     "\"worker\": [...]}"));
  }
  return ClusterSpecFromJsonValue(value, "cluster JSON");
}

absl::StatusOr<ClusterSpec> ClusterSpec::FromJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read the cluster file '",
                                            path, "': check the path"));
  }
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json value = nlohmann::json::parse(text.str(), nullptr,
                                               /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster file '", path,
                     "' is not valid JSON: expected {\"ps\": [\"host:port\", "
                     "...], \"worker\": [...]}"));
  }
  return ClusterSpecFromJsonValue(value,
                                  absl::StrCat("cluster file '", path, "'"));
}

absl::StatusOr<ClusterSpec> ClusterSpec::FromProto(
    const proto::ClusterDef& def) {
  std::map<std::string, std::vector<std::string>> jobs;
  for (const proto::JobDef& job : def.job()) {
    if (jobs.count(job.name())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ClusterDef lists job '", job.name(), "' twice: merge its tasks"));
    }
    std::vector<std::string> tasks(job.tasks_size());
    for (const auto& [index, address] : job.tasks()) {
      if (index < 0 || index >= job.tasks_size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("ClusterDef job '", job.name(), "' has task index ",
                         index, " but only ", job.tasks_size(),
                         " tasks: indices must be 0..n-1 without gaps"));
      }
      tasks[index] = address;
    }
    jobs[job.name()] = std::move(tasks);
  }
  return Create(jobs);
}

void ClusterSpec::ToProto(proto::ClusterDef* def) const {
  def->Clear();
  for (const auto& [name, tasks] : jobs_) {
    proto::JobDef* job = def->add_job();
    job->set_name(name);
    for (size_t i = 0; i < tasks.size(); ++i)
      (*job->mutable_tasks())[static_cast<int32_t>(i)] = tasks[i];
  }
}

std::vector<std::string> ClusterSpec::jobs() const {
  std::vector<std::string> names;
  for (const auto& entry : jobs_) names.push_back(entry.first);
  return names;
}

bool ClusterSpec::HasJob(const std::string& job) const {
  return jobs_.count(job) > 0;
}

int ClusterSpec::num_tasks(const std::string& job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : static_cast<int>(it->second.size());
}

const std::vector<std::string>& ClusterSpec::tasks(
    const std::string& job) const {
  static const std::vector<std::string>* const kNone =
      new std::vector<std::string>();
  auto it = jobs_.find(job);
  return it == jobs_.end() ? *kNone : it->second;
}

absl::StatusOr<std::string> ClusterSpec::TaskAddress(const std::string& job,
                                                     int task_index) const {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || task_index < 0 ||
      task_index >= static_cast<int>(it->second.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the cluster has no task ", task_index, " of job '", job, "': it has ",
        JobSummary(), empty() ? "" : " (indices start at 0)"));
  }
  return it->second[task_index];
}

std::vector<std::string> ClusterSpec::TaskDeviceNames() const {
  std::vector<std::string> names;
  for (const auto& [job, tasks] : jobs_) {
    for (size_t i = 0; i < tasks.size(); ++i)
      names.push_back(absl::StrCat("/job:", job, "/replica:0/task:", i));
  }
  return names;
}

std::string ClusterSpec::JobSummary() const {
  if (jobs_.empty()) return "no jobs";
  std::vector<std::string> parts;
  for (const auto& [job, tasks] : jobs_) {
    parts.push_back(absl::StrCat(job, " (", tasks.size(),
                                 tasks.size() == 1 ? " task)" : " tasks)"));
  }
  return absl::StrJoin(parts, ", ");
}

std::string ClusterSpec::DebugString() const {
  std::vector<std::string> parts;
  for (const auto& [job, tasks] : jobs_) {
    parts.push_back(absl::StrCat(job, ": [", absl::StrJoin(tasks, ", "), "]"));
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace distflow
