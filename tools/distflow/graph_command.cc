#include "tools/distflow/graph_command.h"

#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "core/tensor_coding.h"
#include "graph/attr_value.h"
#include "graph/graph_file.h"
#include "tools/distflow/exit_code.h"
#include "tools/distflow/tensor_stats.h"

namespace distflow {
namespace tools {
namespace {

// Tensors with more elements than this are summarised, not printed.
constexpr int64_t kMaxPrintedElements = 16;

constexpr char kSummary[] =
    "Prints a GraphDef file readably: nodes, inputs, devices, attributes";

constexpr char kDetails[] =
    "Prints a graph saved as a GraphDef (binary or text protobuf, as\n"
    "distflow::WriteGraphFile writes it), one node per line:\n"
    "  name = Op(input, input:1, ^control_input)  @ device\n"
    "followed by its attributes, with dtypes and shapes spelled out and\n"
    "large tensor constants summarised (dtype, shape, min, max, mean).\n"
    "A placed node shows its assigned device after the requested one.";

constexpr char kFooter[] =
    "Examples:\n"
    "  distflow graph model.pb\n"
    "  distflow graph --devices model.pbtxt   # which ops run on each task";

struct GraphFlags {
  std::string file;
  bool by_device = false;
};

// A tensor attribute: its values when small, else a summary of them.
std::string TensorAttrString(const proto::TensorProto& proto) {
  auto tensor = TensorFromProto(proto);
  if (!tensor.ok()) {
    return absl::StrCat("<bad tensor: ", tensor.status().ToString(), ">");
  }
  if (tensor->NumElements() <= kMaxPrintedElements) {
    // DebugString breaks rows onto lines, each indented by one space.
    return absl::StrCat(
        tensor->TypeString(), " ",
        absl::StrReplaceAll(tensor->DebugString(), {{"\n", ""}}));
  }
  std::string text = absl::StrCat(tensor->TypeString(), " (",
                                  tensor->NumElements(), " values");
  if (auto stats = ComputeTensorStats(*tensor)) {
    absl::StrAppend(&text, ": min ", FormatStat(stats->min), ", max ",
                    FormatStat(stats->max), ", mean ", FormatStat(stats->mean));
  }
  return absl::StrCat(text, ")");
}

// "T: float32, shape: [2,3], value: float32[2] [1 2]", attributes by name.
std::string AttrsString(const proto::NodeDef& node) {
  std::map<std::string, const proto::AttrValue*> sorted;
  for (const auto& [name, value] : node.attr()) sorted[name] = &value;
  std::vector<std::string> parts;
  for (const auto& [name, value] : sorted) {
    parts.push_back(absl::StrCat(name, ": ",
                                 value->has_tensor()
                                     ? TensorAttrString(value->tensor())
                                     : AttrValueString(*value)));
  }
  return absl::StrJoin(parts, ", ");
}

// The device a node runs on: the assigned one once placed, else the
// requested one.
std::string DeviceOf(const proto::NodeDef& node) {
  return node.assigned_device().empty() ? node.device()
                                        : node.assigned_device();
}

void PrintNode(const proto::NodeDef& node, const std::string& indent,
               bool show_device) {
  std::string line = absl::StrCat(indent, node.name(), " = ", node.op(), "(",
                                  absl::StrJoin(node.input(), ", "), ")");
  if (show_device && !node.device().empty()) {
    absl::StrAppend(&line, "  @ ", node.device());
  }
  if (show_device && !node.assigned_device().empty() &&
      node.assigned_device() != node.device()) {
    absl::StrAppend(&line, node.device().empty() ? "  @ " : " -> ",
                    node.assigned_device());
  }
  std::cout << line << "\n";
  if (node.attr_size() > 0) {
    std::cout << indent << "    " << AttrsString(node) << "\n";
  }
}

int RunGraph(const GraphFlags& flags) {
  auto def = ReadGraphDefFile(flags.file);
  if (!def.ok()) {
    std::cerr << "distflow graph: " << def.status() << "\n";
    return kExitFailure;
  }
  std::cout << "graph: " << flags.file << " (" << def->node_size()
            << (def->node_size() == 1 ? " node" : " nodes") << ", version "
            << def->version() << ")\n";
  if (!flags.by_device) {
    for (const proto::NodeDef& node : def->node()) PrintNode(node, "", true);
    return kExitOk;
  }
  // Devices sorted by name; nodes keep the file's order within a device.
  std::map<std::string, std::vector<const proto::NodeDef*>> by_device;
  for (const proto::NodeDef& node : def->node()) {
    by_device[DeviceOf(node)].push_back(&node);
  }
  for (const auto& [device, nodes] : by_device) {
    std::cout << "\n"
              << (device.empty() ? "(no device requested)" : device) << ": "
              << nodes.size() << (nodes.size() == 1 ? " node" : " nodes")
              << "\n";
    for (const proto::NodeDef* node : nodes) PrintNode(*node, "  ", false);
  }
  return kExitOk;
}

}  // namespace

void AddGraphCommand(CLI::App& app) {
  auto flags = std::make_shared<GraphFlags>();
  CLI::App* cmd = app.add_subcommand("graph", kSummary);
  // CLI11 prints the footer after the flags: the details, then examples.
  cmd->footer(absl::StrCat(kDetails, "\n\n", kFooter));
  cmd->add_option("FILE", flags->file, "A GraphDef file (binary or text)")
      ->required();
  cmd->add_flag("--devices", flags->by_device,
                "Group the nodes by device, devices sorted by name");
  cmd->callback([flags] { ExitWith(RunGraph(*flags)); });
}

}  // namespace tools
}  // namespace distflow
