#include "graph/placer.h"

#include <numeric>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "graph/device_name.h"

namespace distflow {
namespace {

class UnionFind {
 public:
  explicit UnionFind(int n) : parent_(n) {
    std::iota(parent_.begin(), parent_.end(), 0);
  }
  int Find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Union(int a, int b) { parent_[Find(a)] = Find(b); }

 private:
  std::vector<int> parent_;
};

std::string ListJobs(const std::map<std::string, int>& jobs) {
  std::vector<std::string> parts;
  for (const auto& [job, n] : jobs) {
    parts.push_back(absl::StrCat(job, " (", n, n == 1 ? " task)" : " tasks)"));
  }
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

// Merges `add` into `into`; false if a field set in both differs.
bool MergeCompatible(const DeviceName& add, DeviceName* into) {
  if (add.job && into->job && *add.job != *into->job) return false;
  if (add.replica && into->replica && *add.replica != *into->replica)
    return false;
  if (add.task && into->task && *add.task != *into->task) return false;
  if (add.type && into->type && *add.type != *into->type) return false;
  if (add.id && into->id && *add.id != *into->id) return false;
  into->MergeFrom(add);
  return true;
}

}  // namespace

std::string TaskOfDevice(const std::string& device) {
  const size_t pos = device.find("/device:");
  return pos == std::string::npos ? device : device.substr(0, pos);
}

absl::Status PlaceGraph(const PlacementOptions& options, Graph* graph) {
  const int n = graph->num_nodes();
  UnionFind groups(n);
  for (const auto& node : graph->nodes()) {
    auto cls = node->attrs().find("_class");
    if (cls != node->attrs().end()) {
      for (const std::string& s : cls->second.list().s()) {
        if (!absl::StartsWith(s, "loc:@")) continue;
        const Node* other = graph->FindNode(s.substr(5));
        // A colocation target pruned from this call constrains nothing.
        if (other != nullptr) groups.Union(node->id(), other->id());
      }
    }
    // A resource handle is meaningful only on the device that made it.
    for (int i = 0; i < node->num_inputs(); ++i) {
      if (node->input_type(i) == DataType::kResource) {
        groups.Union(node->id(), node->input(i).node->id());
      }
    }
  }

  // The merged request of each group, and the node that set it (for errors).
  std::vector<DeviceName> request(n);
  std::vector<const Node*> requester(n, nullptr);
  for (const auto& node : graph->nodes()) {
    auto parsed = DeviceName::Parse(node->requested_device());
    if (!parsed.ok()) {
      return AddErrorContext(parsed.status(), node->DebugName());
    }
    const int root = groups.Find(node->id());
    if (!MergeCompatible(*parsed, &request[root])) {
      return absl::InvalidArgumentError(absl::StrCat(
          node->DebugName(), " requests device '", node->requested_device(),
          "' but is colocated with ",
          requester[root] ? requester[root]->DebugName() : "another node",
          " which requests '", request[root].ToString(),
          "'; colocated nodes must agree on their device"));
    }
    if (!parsed->empty() && requester[root] == nullptr) {
      requester[root] = node.get();
    }
  }

  std::vector<std::string> assigned(n);
  for (const auto& node : graph->nodes()) {
    const int root = groups.Find(node->id());
    if (assigned[root].empty()) {
      DeviceName d = request[root];
      const Node* culprit = requester[root] ? requester[root] : node.get();
      if (!d.job) {
        d.job = options.default_job;
        if (!d.task) d.task = options.default_task;
      }
      if (!d.task)
        d.task = *d.job == options.default_job ? options.default_task : 0;
      if (!d.replica) d.replica = 0;
      if (!d.type) d.type = "CPU";
      if (!d.id) d.id = 0;
      auto job = options.jobs.find(*d.job);
      if (job == options.jobs.end() || *d.task < 0 || *d.task >= job->second ||
          *d.replica != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(culprit->DebugName(), " is placed on '", d.ToString(),
                         "' but the cluster has no such task; its jobs are: ",
                         ListJobs(options.jobs)));
      }
      if (*d.type != "CPU" || *d.id != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(culprit->DebugName(), " is placed on '", d.ToString(),
                         "' but every task has just one device, CPU:0"));
      }
      assigned[root] = d.ToString();
    }
    node->set_assigned_device(assigned[root]);
  }
  return absl::OkStatus();
}

}  // namespace distflow
