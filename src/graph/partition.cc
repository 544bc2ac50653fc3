#include "graph/partition.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/attr_value.h"
#include "graph/edge_packing.h"
#include "graph/placer.h"

namespace distflow {
namespace {

// A name that cannot clash with user nodes ('/' separates scopes; ':' is not
// allowed in node names, so "src:1" is made "src_1").
std::string EdgeNodeName(absl::string_view kind, const std::string& src,
                         int index, const std::string& dst_task) {
  std::string task = dst_task;
  for (char& c : task) {
    if (c == '/' || c == ':') c = '_';
  }
  return absl::StrCat("_df_", kind, "/", src, "_", index, task);
}

class Partitioner {
 public:
  explicit Partitioner(const Graph& graph) : graph_(graph) {}

  absl::StatusOr<std::map<std::string, proto::GraphDef>> Run() {
    packing_ = PlanEdgePacking(graph_);
    for (const auto& node : graph_.nodes()) {
      if (node->assigned_device().empty()) {
        return absl::InternalError(
            absl::StrCat(node->DebugName(),
                         " has no assigned device; place the graph "
                         "before partitioning it"));
      }
    }
    for (const auto& node : graph_.nodes()) {
      const std::string& device = node->assigned_device();
      const std::string task = TaskOfDevice(device);
      proto::NodeDef def = node->def();
      def.clear_input();
      for (int i = 0; i < node->num_inputs(); ++i) {
        const Endpoint& in = node->input(i);
        if (TaskOfDevice(in.node->assigned_device()) == task) {
          def.add_input(absl::StrCat(in.node->name(), ":", in.index));
        } else if (auto it = packing_.member_of.find(
                       {in.node->name(), in.index, task});
                   it != packing_.member_of.end()) {
          def.add_input(
              PackedMember(it->second.first, it->second.second, device));
        } else {
          def.add_input(CrossData(*in.node, in.index, device));
        }
      }
      // Control inputs from other tasks, by task: each task's cross as one
      // edge (see CrossControlGroup).
      std::map<std::string, std::vector<const Node*>> remote_controls;
      for (const Node* in : node->control_inputs()) {
        const std::string in_task = TaskOfDevice(in->assigned_device());
        if (in_task == task) {
          def.add_input(absl::StrCat("^", in->name()));
        } else {
          remote_controls[in_task].push_back(in);
        }
      }
      for (const auto& [in_task, ins] : remote_controls) {
        def.add_input(absl::StrCat("^", CrossControlGroup(ins, device)));
      }
      *parts_[task].add_node() = std::move(def);
    }
    return std::move(parts_);
  }

 private:
  // The name of the _Recv on `dst_device`'s task that delivers src:index.
  std::string CrossData(const Node& src, int index,
                        const std::string& dst_device) {
    const std::string dst_task = TaskOfDevice(dst_device);
    const std::string recv_name =
        EdgeNodeName("recv", src.name(), index, dst_task);
    if (!made_.emplace(recv_name).second) return recv_name;
    const std::string edge = absl::StrCat(src.name(), ":", index);
    const std::string& src_device = src.assigned_device();

    AddSendRecv(&parts_[TaskOfDevice(src_device)],
                EdgeNodeName("send", src.name(), index, dst_task), edge,
                &parts_[dst_task], recv_name, edge, src.output_type(index),
                MakeAttr(src.output_shape(index)), src_device, dst_device);
    return recv_name;
  }

  // The name of member `m` of pack `p` on its destination task, building
  // the pack's transfer on first use: on the source task the members are
  // gathered into one tensor; one _Send/_Recv pair carries it; on the
  // destination each member is sliced out and reshaped.
  std::string PackedMember(int p, int m, const std::string& dst_device) {
    const EdgePack& pack = packing_.packs[p];
    const std::string base =
        EdgeNodeName("pack", std::to_string(p), 0, pack.dst_task);
    auto member_name = [&](int i) { return absl::StrCat(base, "/member_", i); };
    if (made_.emplace(base).second) {
      const std::string& src_device = pack.members[0].node->assigned_device();
      proto::GraphDef& src_part = parts_[pack.src_task];
      proto::GraphDef& dst_part = parts_[pack.dst_task];
      auto add = [](proto::GraphDef* part, const std::string& name,
                    const std::string& op, const std::string& device,
                    std::vector<std::string> inputs) {
        proto::NodeDef* node = part->add_node();
        node->set_name(name);
        node->set_op(op);
        node->set_assigned_device(device);
        for (auto& input : inputs) node->add_input(std::move(input));
        return node;
      };
      auto add_const = [&](proto::GraphDef* part, const std::string& name,
                           const std::string& device, const Tensor& value) {
        proto::NodeDef* node = add(part, name, "Const", device, {});
        (*node->mutable_attr())["dtype"] = MakeAttr(value.dtype());
        (*node->mutable_attr())["value"] = MakeAttr(value);
      };
      const proto::AttrValue dtype = MakeAttr(pack.dtype);
      const proto::AttrValue int32 = MakeAttr(DataType::kInt32);
      // The members, joined without a copy: the transport sends each from
      // where it lies (core/gathered_tensor.h).
      std::vector<std::string> values;
      int64_t total = 0;
      for (const Endpoint& e : pack.members) {
        values.push_back(absl::StrCat(e.node->name(), ":", e.index));
        total += e.node->output_shape(e.index).num_elements();
      }
      proto::NodeDef* gather =
          add(&src_part, base + "/gather", "_GatherPack", src_device, values);
      (*gather->mutable_attr())["N"] =
          MakeAttr(static_cast<int64_t>(pack.members.size()));
      (*gather->mutable_attr())["T"] = dtype;

      const std::string recv = base + "/recv";
      AddSendRecv(&src_part, base + "/send", base + "/gather:0", &dst_part,
                  recv, base, pack.dtype, MakeAttr(TensorShape({total})),
                  src_device, dst_device);
      int64_t offset = 0;
      for (size_t i = 0; i < pack.members.size(); ++i) {
        const Endpoint& e = pack.members[i];
        const PartialTensorShape& shape = e.node->output_shape(e.index);
        const int64_t n = shape.num_elements();
        const std::string slice = absl::StrCat(base, "/slice_", i);
        add_const(&dst_part, slice + "/begin", dst_device,
                  Tensor::Vector<int32_t>({static_cast<int32_t>(offset)}));
        add_const(&dst_part, slice + "/size", dst_device,
                  Tensor::Vector<int32_t>({static_cast<int32_t>(n)}));
        proto::NodeDef* sliced =
            add(&dst_part, slice, "Slice", dst_device,
                {recv + ":0", slice + "/begin:0", slice + "/size:0"});
        (*sliced->mutable_attr())["T"] = dtype;
        (*sliced->mutable_attr())["Index"] = int32;
        std::vector<int32_t> dims;
        for (int64_t d : shape.dim_sizes()) {
          dims.push_back(static_cast<int32_t>(d));
        }
        add_const(&dst_part, member_name(i) + "/shape", dst_device,
                  Tensor::Vector<int32_t>(dims));
        proto::NodeDef* reshape =
            add(&dst_part, member_name(i), "Reshape", dst_device,
                {slice + ":0", member_name(i) + "/shape:0"});
        (*reshape->mutable_attr())["T"] = dtype;
        (*reshape->mutable_attr())["Tshape"] = int32;
        offset += n;
      }
    }
    return member_name(m) + ":0";
  }

  // The control edges from `srcs` (all on one task) to a node on
  // `dst_device`'s task. Several cross as one: a NoOp on their task waits
  // for all of them, and only its edge crosses. An optimizer's update group
  // on a worker waits for every apply op on a ps; one tensor crossing
  // instead of one per variable saves a transfer each, every step.
  std::string CrossControlGroup(const std::vector<const Node*>& srcs,
                                const std::string& dst_device) {
    if (srcs.size() == 1) {
      return CrossControl(srcs[0]->name(), srcs[0]->assigned_device(),
                          dst_device);
    }
    std::vector<std::string> names;
    for (const Node* src : srcs) names.push_back(src->name());
    std::sort(names.begin(), names.end());
    const std::string dst_task = TaskOfDevice(dst_device);
    const std::string key =
        absl::StrCat(dst_task, "|", absl::StrJoin(names, ","));
    auto it = control_groups_.find(key);
    if (it != control_groups_.end()) return it->second;

    const std::string& src_device = srcs[0]->assigned_device();
    const std::string group_name =
        EdgeNodeName("ctrl_group", names[0],
                     static_cast<int>(control_groups_.size()), dst_task);
    proto::NodeDef* group = parts_[TaskOfDevice(src_device)].add_node();
    group->set_name(group_name);
    group->set_op("NoOp");
    for (const std::string& name : names) {
      group->add_input(absl::StrCat("^", name));
    }
    group->set_assigned_device(src_device);
    const std::string recv_name =
        CrossControl(group_name, src_device, dst_device);
    control_groups_.emplace(key, recv_name);
    return recv_name;
  }

  // A control edge crosses as a scalar made after `src` ran.
  std::string CrossControl(const std::string& src,
                           const std::string& src_device,
                           const std::string& dst_device) {
    const std::string dst_task = TaskOfDevice(dst_device);
    const std::string recv_name = EdgeNodeName("ctrl_recv", src, 0, dst_task);
    if (!made_.emplace(recv_name).second) return recv_name;
    const std::string edge = absl::StrCat("^", src);
    proto::GraphDef& src_part = parts_[TaskOfDevice(src_device)];

    const std::string dummy_name = EdgeNodeName("ctrl", src, 0, dst_task);
    proto::NodeDef* dummy = src_part.add_node();
    dummy->set_name(dummy_name);
    dummy->set_op("Const");
    dummy->add_input(absl::StrCat("^", src));
    dummy->set_assigned_device(src_device);
    (*dummy->mutable_attr())["dtype"] = MakeAttr(DataType::kFloat);
    (*dummy->mutable_attr())["value"] = MakeAttr(Tensor::Scalar<float>(0));

    AddSendRecv(&src_part, EdgeNodeName("ctrl_send", src, 0, dst_task),
                dummy_name, &parts_[dst_task], recv_name, edge,
                DataType::kFloat, MakeAttr(TensorShape()), src_device,
                dst_device);
    return recv_name;
  }

  // Adds to `src_part` a _Send `send_name` of `input` and to `dst_part` the
  // _Recv `recv_name` that receives it, both keyed by `tensor_name`.
  static void AddSendRecv(proto::GraphDef* src_part,
                          const std::string& send_name,
                          const std::string& input, proto::GraphDef* dst_part,
                          const std::string& recv_name,
                          const std::string& tensor_name, DataType dtype,
                          const proto::AttrValue& shape,
                          const std::string& src_device,
                          const std::string& dst_device) {
    proto::NodeDef* send = src_part->add_node();
    send->set_name(send_name);
    send->set_op("_Send");
    send->add_input(input);
    send->set_assigned_device(src_device);
    auto& send_attr = *send->mutable_attr();
    send_attr["T"] = MakeAttr(dtype);
    send_attr["tensor_name"] = MakeAttr(tensor_name);
    send_attr["send_device"] = MakeAttr(src_device);
    send_attr["recv_device"] = MakeAttr(dst_device);

    proto::NodeDef* recv = dst_part->add_node();
    recv->set_name(recv_name);
    recv->set_op("_Recv");
    recv->set_assigned_device(dst_device);
    auto& recv_attr = *recv->mutable_attr();
    recv_attr["tensor_type"] = MakeAttr(dtype);
    recv_attr["tensor_name"] = MakeAttr(tensor_name);
    recv_attr["send_device"] = MakeAttr(src_device);
    recv_attr["recv_device"] = MakeAttr(dst_device);
    recv_attr["shape"] = shape;
  }

  const Graph& graph_;
  std::map<std::string, proto::GraphDef> parts_;
  absl::flat_hash_set<std::string> made_;
  EdgePackingPlan packing_;
  // The _Recv name of each group of control edges, by destination task and
  // sources.
  absl::flat_hash_map<std::string, std::string> control_groups_;
};

}  // namespace

absl::StatusOr<std::map<std::string, proto::GraphDef>> PartitionGraph(
    const Graph& graph) {
  return Partitioner(graph).Run();
}

}  // namespace distflow
