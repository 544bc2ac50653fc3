#include "graph/gradients/grad_registry.h"

#include "absl/strings/str_cat.h"
#include "graph/graph.h"

namespace distflow {

GradRegistry* GradRegistry::Global() {
  static GradRegistry* registry = [] {
    auto* r = new GradRegistry;
    RegisterArrayGradients(r);
    RegisterMathGradients(r);
    RegisterNnGradients(r);
    RegisterStateGradients(r);
    RegisterEmbeddingGradients(r);
    return r;
  }();
  return registry;
}

absl::Status GradRegistry::Register(const std::string& op, GradFunc fn) {
  if (!fn) {
    return absl::InvalidArgumentError(
        absl::StrCat("empty gradient function for op ", op));
  }
  absl::MutexLock lock(&mu_);
  if (!funcs_.emplace(op, std::move(fn)).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("op ", op, " already has a gradient"));
  }
  return absl::OkStatus();
}

absl::Status GradRegistry::RegisterNoGradient(const std::string& op) {
  absl::MutexLock lock(&mu_);
  if (!funcs_.emplace(op, GradFunc()).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("op ", op, " already has a gradient"));
  }
  return absl::OkStatus();
}

absl::StatusOr<GradFunc> GradRegistry::Lookup(const std::string& op) const {
  absl::MutexLock lock(&mu_);
  auto it = funcs_.find(op);
  if (it == funcs_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "no gradient is defined for op ", op,
        "; register one in graph/gradients/, or stop the gradient before it"));
  }
  return it->second;
}

Output OpInput(const Operation& op, int index) {
  const Endpoint& e = op.node()->input(index);
  return Output(e.node, e.index);
}

}  // namespace distflow
