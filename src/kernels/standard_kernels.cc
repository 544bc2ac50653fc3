#include "kernels/kernel_families.h"

namespace distflow {

void RegisterStandardKernels(KernelRegistry* registry) {
  RegisterArrayKernels(registry);
  RegisterConcatSplitKernels(registry);
  RegisterGatherKernels(registry);
  RegisterRandomKernels(registry);
  RegisterSliceKernels(registry);
  RegisterTransposeKernels(registry);
  RegisterControlKernels(registry);
  RegisterMathKernels(registry);
  RegisterActivationKernels(registry);
  RegisterSoftmaxKernels(registry);
  RegisterXentKernels(registry);
  RegisterConvKernels(registry);
  RegisterPoolingKernels(registry);
  RegisterStateKernels(registry);
  RegisterTrainingKernels(registry);
  RegisterSendRecvKernels(registry);
  RegisterEmbeddingKernels(registry);
  RegisterAccumulatorKernels(registry);
  RegisterQueueKernels(registry);
  RegisterStalenessKernels(registry);
  RegisterSummaryKernels(registry);
  RegisterCheckpointKernels(registry);
}

}  // namespace distflow
