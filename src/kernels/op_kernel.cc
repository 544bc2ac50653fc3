#include "kernels/op_kernel.h"

#include "absl/synchronization/notification.h"

namespace distflow {

OpKernel::OpKernel(OpKernelConstruction* ctx)
    : name_(ctx->node().name()),
      type_(ctx->node().op()),
      output_types_(ctx->node().output_types()) {}

void AsyncOpKernel::Compute(OpKernelContext* ctx) {
  absl::Notification done;
  ComputeAsync(ctx, [&done] { done.Notify(); });
  done.WaitForNotification();
}

}  // namespace distflow
