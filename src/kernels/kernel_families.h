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
// Called by RegisterMathKernels (kernels/math_kernels.cc), one per file.
void RegisterCwiseBinaryKernels(KernelRegistry* registry);
void RegisterCwiseUnaryKernels(KernelRegistry* registry);
void RegisterReductionKernels(KernelRegistry* registry);
void RegisterMatMulKernels(KernelRegistry* registry);
void RegisterActivationKernels(KernelRegistry* registry);
void RegisterSoftmaxKernels(KernelRegistry* registry);
void RegisterXentKernels(KernelRegistry* registry);
void RegisterConvKernels(KernelRegistry* registry);
void RegisterPoolingKernels(KernelRegistry* registry);
void RegisterStateKernels(KernelRegistry* registry);
void RegisterTrainingKernels(KernelRegistry* registry);
void RegisterSendRecvKernels(KernelRegistry* registry);
void RegisterEmbeddingKernels(KernelRegistry* registry);
void RegisterAccumulatorKernels(KernelRegistry* registry);
void RegisterQueueKernels(KernelRegistry* registry);
void RegisterStalenessKernels(KernelRegistry* registry);
void RegisterSummaryKernels(KernelRegistry* registry);
void RegisterCheckpointKernels(KernelRegistry* registry);

}  // namespace distflow

#endif  // DISTFLOW_KERNELS_KERNEL_FAMILIES_H_
