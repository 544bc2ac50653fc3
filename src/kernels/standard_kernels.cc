#include "kernels/kernel_families.h"

namespace distflow {

void RegisterStandardKernels(KernelRegistry* registry) {
  RegisterArrayKernels(registry);
  RegisterControlKernels(registry);
  RegisterMathKernels(registry);
  RegisterActivationKernels(registry);
  RegisterSoftmaxKernels(registry);
  RegisterXentKernels(registry);
  RegisterConvKernels(registry);
  RegisterPoolingKernels(registry);
  RegisterStateKernels(registry);
}

}  // namespace distflow
