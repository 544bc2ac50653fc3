// The kernel families of the standard kernel set, one file each in kernels/.
#ifndef DISTFLOW_KERNELS_KERNEL_FAMILIES_H_
#define DISTFLOW_KERNELS_KERNEL_FAMILIES_H_

#include "kernels/kernel_registry.h"

namespace distflow {

void RegisterArrayKernels(KernelRegistry* registry);
void RegisterControlKernels(KernelRegistry* registry);
void RegisterMathKernels(KernelRegistry* registry);
void RegisterStateKernels(KernelRegistry* registry);
void RegisterSendRecvKernels(KernelRegistry* registry);

}  // namespace distflow

#endif  // DISTFLOW_KERNELS_KERNEL_FAMILIES_H_
