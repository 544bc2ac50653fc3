// Kernels by op type and device type.
#ifndef DISTFLOW_KERNELS_KERNEL_REGISTRY_H_
#define DISTFLOW_KERNELS_KERNEL_REGISTRY_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "base/logging.h"
#include "kernels/op_kernel.h"

namespace distflow {

using KernelFactory =
    std::function<std::unique_ptr<OpKernel>(OpKernelConstruction*)>;

class KernelRegistry {
 public:
  // The process-wide registry with every standard kernel (registered on first
  // use). Thread-safe.
  static KernelRegistry* Global();

  // ALREADY_EXISTS if a kernel for (op, device_type) is registered.
  absl::Status Register(const std::string& op, const std::string& device_type,
                        KernelFactory factory);

  // A kernel for `node` on `device`; NOT_FOUND naming the op and device type if
  // none is registered; the construction error (naming the node) if the kernel
  // rejects its attributes.
  absl::StatusOr<std::unique_ptr<OpKernel>> CreateKernel(
      const Node& node, DeviceBase* device,
      const std::string& device_type) const;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, KernelFactory> factories_
      ABSL_GUARDED_BY(mu_);
};

// Registers distflow's CPU kernels (one function per op family, in
// kernels/*_kernels.cc).
void RegisterStandardKernels(KernelRegistry* registry);

// Shorthand for kernel files: registers `Kernel` (constructible from
// OpKernelConstruction*) for `op` on CPU; a duplicate is a programming error.
template <typename Kernel>
void RegisterCpuKernel(KernelRegistry* registry, const std::string& op) {
  absl::Status s = registry->Register(op, "CPU", [](OpKernelConstruction* ctx) {
    return std::unique_ptr<OpKernel>(new Kernel(ctx));
  });
  DF_CHECK(s.ok()) << s;
}

}  // namespace distflow

#endif  // DISTFLOW_KERNELS_KERNEL_REGISTRY_H_
