#include "graph/edge_packing.h"

#include <algorithm>
#include <deque>
#include <utility>

#include "graph/placer.h"

namespace distflow {
namespace {

// The bytes of `node`'s output `index` if its shape is fully known and small
// enough to pack; -1 otherwise.
int64_t PackableBytes(const Node& node, int index) {
  const PartialTensorShape& shape = node.output_shape(index);
  if (!shape.IsFullyDefined()) return -1;
  const int64_t bytes =
      shape.num_elements() *
      static_cast<int64_t>(DataTypeSize(node.output_type(index)));
  return bytes > 0 && bytes <= kMaxPackedTensorBytes ? bytes : -1;
}

// True if the graph's edges plus `extra` (node id pairs) have no cycle.
bool Acyclic(const Graph& graph,
             const std::vector<std::pair<int, int>>& extra) {
  int max_id = 0;
  for (const auto& node : graph.nodes()) max_id = std::max(max_id, node->id());
  std::vector<std::vector<int>> out(max_id + 1);
  std::vector<int> in_degree(max_id + 1, 0);
  auto add = [&](int from, int to) {
    out[from].push_back(to);
    ++in_degree[to];
  };
  for (const auto& node : graph.nodes()) {
    for (const Endpoint& in : node->inputs()) add(in.node->id(), node->id());
    for (const Node* in : node->control_inputs()) add(in->id(), node->id());
  }
  for (const auto& [from, to] : extra) add(from, to);
  std::deque<int> ready;
  for (const auto& node : graph.nodes()) {
    if (in_degree[node->id()] == 0) ready.push_back(node->id());
  }
  size_t visited = 0;
  while (!ready.empty()) {
    const int id = ready.front();
    ready.pop_front();
    ++visited;
    for (int next : out[id]) {
      if (--in_degree[next] == 0) ready.push_back(next);
    }
  }
  return visited == graph.nodes().size();
}

}  // namespace

EdgePackingPlan PlanEdgePacking(const Graph& graph) {
  // Candidate groups, by (source task, destination task, dtype); each
  // member's consumers on the destination task.
  struct Candidate {
    EdgePack pack;
    std::vector<std::vector<const Node*>> consumers;
  };
  // Keyed by source task, destination task, dtype and the number of the
  // pack among theirs (a new one once the last is full).
  using GroupKey = std::tuple<std::string, std::string, DataType, int>;
  std::map<GroupKey, Candidate> groups;
  // The pack that tensors of (source, destination, dtype) go to now, and
  // the bytes it holds.
  std::map<std::tuple<std::string, std::string, DataType>,
           std::pair<int, int64_t>>
      filling;
  // (source node, output, destination task) -> its group and member index.
  std::map<std::tuple<std::string, int, std::string>, std::pair<GroupKey, int>>
      member_index;
  for (const auto& node : graph.nodes()) {
    const std::string dst_task = TaskOfDevice(node->assigned_device());
    for (const Endpoint& in : node->inputs()) {
      const std::string src_task = TaskOfDevice(in.node->assigned_device());
      const int64_t bytes = PackableBytes(*in.node, in.index);
      if (src_task == dst_task || bytes < 0) continue;
      const DataType dtype = in.node->output_type(in.index);
      auto [it, added] = member_index.try_emplace(
          std::make_tuple(in.node->name(), in.index, dst_task));
      if (added) {
        auto& [number, held] = filling[{src_task, dst_task, dtype}];
        if (held > 0 && held + bytes > kMaxPackBytes) {
          ++number;
          held = 0;
        }
        held += bytes;
        const GroupKey key{src_task, dst_task, dtype, number};
        Candidate& group = groups[key];
        group.pack.src_task = src_task;
        group.pack.dst_task = dst_task;
        group.pack.dtype = dtype;
        group.pack.members.push_back(in);
        group.consumers.emplace_back();
        it->second = {key, static_cast<int>(group.pack.members.size()) - 1};
      }
      const auto& [key, index] = it->second;
      groups[key].consumers[index].push_back(node.get());
    }
  }

  EdgePackingPlan plan;
  std::vector<std::pair<int, int>> waits;  // of the groups kept so far
  for (auto& [key, group] : groups) {
    if (group.pack.members.size() < 2) continue;
    std::vector<std::pair<int, int>> with_group = waits;
    for (const Endpoint& member : group.pack.members) {
      for (const auto& consumers : group.consumers) {
        for (const Node* consumer : consumers) {
          with_group.emplace_back(member.node->id(), consumer->id());
        }
      }
    }
    if (!Acyclic(graph, with_group)) continue;
    waits = std::move(with_group);
    const int pack = static_cast<int>(plan.packs.size());
    for (size_t m = 0; m < group.pack.members.size(); ++m) {
      const Endpoint& e = group.pack.members[m];
      plan.member_of[{e.node->name(), e.index, group.pack.dst_task}] = {
          pack, static_cast<int>(m)};
    }
    plan.packs.push_back(std::move(group.pack));
  }
  return plan;
}

}  // namespace distflow
