// The kernel families of the standard kernel set, one file each in kernels/.
#ifndef DISTFLOW_KERNELS_KERNEL_FAMILIES_H_
#define DISTFLOW_KERNELS_KERNEL_FAMILIES_H_

#include "kernels/kernel_registry.h"

namespace distflow {

void RegisterArrayKernels(KernelRegistry* registry);
void RegisterConcatSplitKernels(KernelRegistry* registry);
void RegisterGatherKernels(KernelRegistry* registry);
void RegisterRandomKernels(KernelRegistry* registry);
void RegisterSliceKernels(KernelRegistry* registry);
void RegisterTransposeKernels(KernelRegistry* registry);
void RegisterControlKernels(KernelRegistry* registry);
void RegisterMathKernels(KernelRegistry* registry);
void RegisterStateKernels(KernelRegistry* registry);
void RegisterSendRecvKernels(KernelRegistry* registry);
void RegisterEmbeddingKernels(KernelRegistry* registry);

}  // namespace distflow

#endif  // DISTFLOW_KERNELS_KERNEL_FAMILIES_H_
