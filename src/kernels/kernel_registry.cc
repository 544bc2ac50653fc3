#include "kernels/kernel_registry.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace distflow {

KernelRegistry* KernelRegistry::Global() {
  static KernelRegistry* registry = [] {
    auto* r = new KernelRegistry();
    RegisterStandardKernels(r);
    return r;
  }();
  return registry;
}

absl::Status KernelRegistry::Register(const std::string& op,
                                      const std::string& device_type,
                                      KernelFactory factory) {
  absl::MutexLock lock(&mu_);
  const std::string key = absl::StrCat(op, "@", device_type);
  if (!factories_.emplace(key, std::move(factory)).second) {
    return absl::AlreadyExistsError(absl::StrCat(
        "a ", device_type, " kernel for op '", op, "' is already registered"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<OpKernel>> KernelRegistry::CreateKernel(
    const Node& node, DeviceBase* device,
    const std::string& device_type) const {
  KernelFactory factory;
  {
    absl::MutexLock lock(&mu_);
    auto it = factories_.find(absl::StrCat(node.op(), "@", device_type));
    if (it == factories_.end()) {
      return absl::NotFoundError(
          absl::StrCat(node.DebugName(), ": no ", device_type,
                       " kernel is registered for op '", node.op(), "'"));
    }
    factory = it->second;
  }
  OpKernelConstruction ctx(&node, device);
  std::unique_ptr<OpKernel> kernel = factory(&ctx);
  if (!ctx.status().ok())
    return AddErrorContext(ctx.status(), node.DebugName());
  return kernel;
}

}  // namespace distflow
