// The math kernel family, one file per kind: elementwise binary and unary ops,
// reductions and matrix products.
#include "kernels/kernel_families.h"

namespace distflow {

void RegisterMathKernels(KernelRegistry* r) {
  RegisterCwiseBinaryKernels(r);
  RegisterCwiseUnaryKernels(r);
  RegisterReductionKernels(r);
  RegisterMatMulKernels(r);
}

}  // namespace distflow
