#include "graph/op_registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/logging.h"

namespace distflow {

OpRegistry* OpRegistry::Global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    RegisterStandardOps(r);
    return r;
  }();
  return registry;
}

absl::Status OpRegistry::Register(OpDef def) {
  absl::MutexLock lock(&mu_);
  const std::string name = def.name;
  if (ops_.contains(name)) {
    return absl::AlreadyExistsError(
        absl::StrCat("op '", name, "' is already registered"));
  }
  ops_.emplace(name, std::make_unique<const OpDef>(std::move(def)));
  return absl::OkStatus();
}

absl::StatusOr<const OpDef*> OpRegistry::LookUp(const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = ops_.find(name);
  if (it == ops_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "no op named '", name,
        "' is registered (is the library that defines it linked in?)"));
  }
  return it->second.get();
}

std::vector<std::string> OpRegistry::OpNames() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, def] : ops_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace distflow
