#include "kernels/kernel_families.h"

namespace distflow {

void RegisterStandardKernels(KernelRegistry* registry) {
  RegisterArrayKernels(registry);
  RegisterControlKernels(registry);
  RegisterMathKernels(registry);
  RegisterStateKernels(registry);
  RegisterSendRecvKernels(registry);
}

}  // namespace distflow
