#include "distflow/scope.h"

#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/device_name.h"
#include "graph/graph.h"

namespace distflow {

// Operation and Output accessors: thin views of a Node.
std::string Operation::name() const {
  return node_ ? node_->name() : "<invalid>";
}
std::string Operation::type() const {
  return node_ ? node_->op() : "<invalid>";
}
std::string Operation::device() const {
  return node_ ? node_->requested_device() : "";
}
int Operation::num_outputs() const { return node_ ? node_->num_outputs() : 0; }
Output Operation::output(int i) const { return Output(node_, i); }

std::string Output::name() const {
  return node_ ? absl::StrCat(node_->name(), ":", index_) : "<invalid>";
}
DataType Output::dtype() const {
  return node_ && index_ < node_->num_outputs() ? node_->output_type(index_)
                                                : DataType::kInvalid;
}
PartialTensorShape Output::shape() const {
  return node_ && index_ < node_->num_outputs() ? node_->output_shape(index_)
                                                : PartialTensorShape();
}

struct Scope::Impl {
  std::shared_ptr<Graph> graph;
  std::shared_ptr<absl::Status> status;
  std::string name_prefix;  // "" or "outer/inner/"
  std::string op_name;      // from WithOpName; applies to the next op only
  std::vector<std::variant<std::string, DeviceFunction>>
      devices;  // outermost first
  std::vector<Operation> control_deps;
  Operation colocate_with;
};

Scope::Scope(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Scope::~Scope() = default;
Scope::Scope(const Scope&) = default;
Scope& Scope::operator=(const Scope&) = default;

Scope Scope::NewRootScope() {
  auto impl = std::make_shared<Impl>();
  impl->graph = std::make_shared<Graph>();
  impl->status = std::make_shared<absl::Status>();
  return Scope(std::move(impl));
}

Scope Scope::NewSubScope(const std::string& name) const {
  auto impl = std::make_shared<Impl>(*impl_);
  impl->op_name.clear();
  if (!name.empty()) {
    impl->name_prefix =
        impl_->graph->UniqueName(impl_->name_prefix + name) + "/";
  }
  return Scope(std::move(impl));
}

Scope Scope::NewSubScopeOf(const Operation& op) const {
  auto impl = std::make_shared<Impl>(*impl_);
  impl->op_name.clear();
  impl->name_prefix = op.name() + "/";
  return Scope(std::move(impl));
}

Scope Scope::WithOpName(const std::string& name) const {
  auto impl = std::make_shared<Impl>(*impl_);
  impl->op_name = name;
  return Scope(std::move(impl));
}

Scope Scope::WithDevice(const std::string& device) const {
  auto impl = std::make_shared<Impl>(*impl_);
  impl->devices.emplace_back(device);
  return Scope(std::move(impl));
}

Scope Scope::WithDeviceFunction(DeviceFunction fn) const {
  auto impl = std::make_shared<Impl>(*impl_);
  impl->devices.emplace_back(std::move(fn));
  return Scope(std::move(impl));
}

Scope Scope::WithControlDependencies(const std::vector<Operation>& deps) const {
  auto impl = std::make_shared<Impl>(*impl_);
  impl->control_deps.insert(impl->control_deps.end(), deps.begin(), deps.end());
  return Scope(std::move(impl));
}

Scope Scope::WithNoControlDependencies() const {
  auto impl = std::make_shared<Impl>(*impl_);
  impl->control_deps.clear();
  return Scope(std::move(impl));
}

Scope Scope::ColocateWith(const Operation& op) const {
  auto impl = std::make_shared<Impl>(*impl_);
  impl->colocate_with = op;
  return Scope(std::move(impl));
}

bool Scope::ok() const { return impl_->status->ok(); }
absl::Status Scope::status() const { return *impl_->status; }
void Scope::UpdateStatus(const absl::Status& status) const {
  if (impl_->status->ok() && !status.ok()) *impl_->status = status;
}

Graph* Scope::graph() const { return impl_->graph.get(); }
std::shared_ptr<Graph> Scope::graph_as_shared_ptr() const {
  return impl_->graph;
}

absl::Status Scope::ToGraphDef(proto::GraphDef* out) const {
  DF_RETURN_IF_ERROR(status());
  impl_->graph->ToGraphDef(out);
  return absl::OkStatus();
}

std::string Scope::GetUniqueNameForOp(const std::string& default_name) const {
  const std::string& base =
      impl_->op_name.empty() ? default_name : impl_->op_name;
  return impl_->graph->UniqueName(impl_->name_prefix + base);
}

const std::vector<Operation>& Scope::control_dependencies() const {
  return impl_->control_deps;
}
const Operation& Scope::colocate_with() const { return impl_->colocate_with; }

absl::StatusOr<std::string> Scope::DeviceFor(const Operation& op) const {
  std::string device;
  for (const auto& spec : impl_->devices) {
    std::string inner;
    if (const auto* name = std::get_if<std::string>(&spec)) {
      inner = *name;
    } else {
      // The function sees the device requested so far.
      op.node()->set_requested_device(device);
      inner = std::get<DeviceFunction>(spec)(op);
    }
    auto merged = MergeDeviceNames(device, inner);
    if (!merged.ok())
      return AddErrorContext(merged.status(), op.node()->DebugName());
    device = *merged;
  }
  return device;
}

}  // namespace distflow
