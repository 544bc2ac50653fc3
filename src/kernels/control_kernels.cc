// NoOp, and the _Arg/_Retval kernels that move feeds and fetches through the
// call frame.
#include "absl/strings/str_cat.h"
#include "kernels/kernel_families.h"

namespace distflow {
namespace {

class NoOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {}
  bool IsExpensive() const override { return false; }
};

class ArgOp : public OpKernel {
 public:
  explicit ArgOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    ctx->SetStatus(ctx->GetAttr("index", &index_));
  }
  void Compute(OpKernelContext* ctx) override {
    DF_OP_REQUIRES(ctx, ctx->call_frame() != nullptr,
                   absl::InternalError("_Arg run without a call frame"));
    auto value = ctx->call_frame()->GetArg(index_);
    DF_OP_REQUIRES_OK(ctx, value.status());
    ctx->set_output(0, *value);
  }
  bool IsExpensive() const override { return false; }

 private:
  int index_ = 0;
};

class RetvalOp : public OpKernel {
 public:
  explicit RetvalOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    ctx->SetStatus(ctx->GetAttr("index", &index_));
  }
  void Compute(OpKernelContext* ctx) override {
    DF_OP_REQUIRES(ctx, ctx->call_frame() != nullptr,
                   absl::InternalError("_Retval run without a call frame"));
    DF_OP_REQUIRES_OK(ctx, ctx->call_frame()->SetRetval(index_, ctx->input(0)));
  }
  bool IsExpensive() const override { return false; }

 private:
  int index_ = 0;
};

}  // namespace

void RegisterControlKernels(KernelRegistry* r) {
  RegisterCpuKernel<NoOpKernel>(r, "NoOp");
  RegisterCpuKernel<ArgOp>(r, "_Arg");
  RegisterCpuKernel<RetvalOp>(r, "_Retval");
}

}  // namespace distflow
