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
  RegisterStateKernels(registry);
  RegisterSendRecvKernels(registry);
  RegisterEmbeddingKernels(registry);
}

}  // namespace distflow
