// Accumulator kernels: the handle ops (which create the accumulator on first
// run), apply, take (blocking without a thread), set-global-step, count and
// close.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/accumulator.h"
#include "kernels/kernel_families.h"
#include "kernels/resource_handle_util.h"

namespace distflow {
namespace {

constexpr char kKind[] = "accumulator";

// Looks up the accumulator of input 0, checking that it is dense or sparse as
// the op expects.
absl::StatusOr<std::shared_ptr<Accumulator>> GetAccumulator(
    OpKernelContext* ctx, const OpKernel& op, std::optional<bool> sparse) {
  auto acc = LookupResourceFromInput<Accumulator>(ctx, 0, kKind);
  if (!acc.ok()) return acc.status();
  if (sparse.has_value() && (*acc)->is_sparse() != *sparse) {
    return absl::InvalidArgumentError(absl::StrCat(
        op.type(), " needs a ", *sparse ? "sparse " : "dense ",
        "accumulator, but '", (*acc)->name(), "' is ", (*acc)->DebugString()));
  }
  return acc;
}

absl::Status ScalarInput(OpKernelContext* ctx, int i, const char* what) {
  if (ctx->input(i).NumElements() == 1 && ctx->input(i).dims() == 0) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      what, " must be a scalar, got ", ctx->input(i).TypeString()));
}

// Inputs: handle, local_step, then the gradient (dense: the gradient; sparse:
// indices and values).
template <bool kSparse>
class ApplyGradientOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto acc = GetAccumulator(ctx, *this, kSparse);
    DF_OP_REQUIRES_OK(ctx, acc.status());
    DF_OP_REQUIRES_OK(ctx, ScalarInput(ctx, 1, "local_step"));
    std::vector<Tensor> gradient;
    for (int i = 2; i < ctx->num_inputs(); ++i) {
      gradient.push_back(ctx->input(i));
    }
    auto applied = (*acc)->Apply(ctx->input(1).scalar<int64_t>(), gradient);
    DF_OP_REQUIRES_OK(ctx, applied.status());
  }
};

template <bool kSparse>
class TakeGradientOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* ctx, std::function<void()> done) override {
    auto acc = GetAccumulator(ctx, *this, kSparse);
    absl::Status s = acc.status();
    if (s.ok()) s = ScalarInput(ctx, 1, "num_required");
    if (!s.ok()) {
      ctx->SetStatus(s);
      done();
      return;
    }
    (*acc)->Take(ctx->input(1).scalar<int32_t>(), ctx->cancellation(), *acc,
                 [ctx, done](const absl::Status& s, Accumulator::Result r) {
                   if (s.ok()) {
                     for (size_t i = 0; i < r.size(); ++i) {
                       ctx->set_output(i, std::move(r[i]));
                     }
                   } else {
                     ctx->SetStatus(s);
                   }
                   done();
                 });
  }
};

class SetGlobalStepOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto acc = GetAccumulator(ctx, *this, std::nullopt);
    DF_OP_REQUIRES_OK(ctx, acc.status());
    DF_OP_REQUIRES_OK(ctx, ScalarInput(ctx, 1, "new_global_step"));
    (*acc)->SetGlobalStep(ctx->input(1).scalar<int64_t>());
  }
};

class NumAccumulatedOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto acc = GetAccumulator(ctx, *this, std::nullopt);
    DF_OP_REQUIRES_OK(ctx, acc.status());
    ctx->set_output(0, Tensor::Scalar<int32_t>((*acc)->NumAccumulated()));
  }
};

class CloseAccumulatorOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto acc = GetAccumulator(ctx, *this, std::nullopt);
    DF_OP_REQUIRES_OK(ctx, acc.status());
    (*acc)->Close();
  }
};

}  // namespace

void RegisterAccumulatorKernels(KernelRegistry* r) {
  RegisterCpuKernel<DeclaredResourceHandleOp<DenseAccumulator>>(
      r, "ConditionalAccumulator");
  RegisterCpuKernel<DeclaredResourceHandleOp<SparseAccumulator>>(
      r, "SparseConditionalAccumulator");
  RegisterCpuKernel<ApplyGradientOp<false>>(r, "AccumulatorApplyGradient");
  RegisterCpuKernel<ApplyGradientOp<true>>(r, "SparseAccumulatorApplyGradient");
  RegisterCpuKernel<TakeGradientOp<false>>(r, "AccumulatorTakeGradient");
  RegisterCpuKernel<TakeGradientOp<true>>(r, "SparseAccumulatorTakeGradient");
  RegisterCpuKernel<SetGlobalStepOp>(r, "AccumulatorSetGlobalStep");
  RegisterCpuKernel<NumAccumulatedOp>(r, "AccumulatorNumAccumulated");
  RegisterCpuKernel<CloseAccumulatorOp>(r, "AccumulatorClose");
}

}  // namespace distflow
