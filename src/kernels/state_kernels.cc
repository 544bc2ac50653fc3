// Variable kernels: handle, read, assign, assign-add/sub, is-initialized.
#include <atomic>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "core/type_dispatch.h"
#include "kernels/kernel_families.h"
#include "kernels/variable.h"

namespace distflow {

bool Var::ValueShared() const {
  if (value_.buffer().use_count() > 1 ||
      value_.buffer()->SharedWithOtherProcesses()) {
    return true;
  }
  // use_count() is a relaxed read; the fence orders it after the release
  // decrement of the last reader that let go, so that reader's accesses
  // happen before our writes.
  std::atomic_thread_fence(std::memory_order_acquire);
  return false;
}

Tensor* Var::mutable_value() {
  if (ValueShared()) value_ = value_.Copy();
  return &value_;
}

Tensor* Var::value_for_overwrite(Tensor* previous) {
  const bool shared = ValueShared();
  *previous = value_;
  if (shared) value_ = Tensor::Uninitialized(value_.dtype(), value_.shape());
  return &value_;
}

std::string Var::DebugString() const {
  absl::MutexLock lock(&mu_);
  return absl::StrCat(
      "a ", DataTypeName(dtype_), " variable",
      initialized_ ? absl::StrCat(" of shape ", value_.shape().DebugString())
                   : " (uninitialized)");
}

namespace {

class VarHandleOp : public OpKernel {
 public:
  explicit VarHandleOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    std::string container, shared_name;
    DataType dtype;
    ctx->SetStatus(ctx->GetAttr("container", &container));
    ctx->SetStatus(ctx->GetAttr("shared_name", &shared_name));
    ctx->SetStatus(ctx->GetAttr("dtype", &dtype));
    handle_ = Tensor::Scalar(
        ResourceHandle{ctx->device()->name(), container,
                       shared_name.empty() ? name() : shared_name, dtype});
  }
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, handle_); }
  bool IsExpensive() const override { return false; }

 private:
  Tensor handle_;
};

absl::Status UninitializedError(const std::string& name) {
  return absl::FailedPreconditionError(
      absl::StrCat("variable '", name,
                   "' is not initialized: run the global variables initializer "
                   "(ops::GlobalVariablesInitializer) or restore a checkpoint "
                   "before reading it"));
}

}  // namespace

absl::StatusOr<const ResourceHandle*> ScalarHandle(const Tensor& tensor,
                                                   absl::string_view what) {
  if (tensor.dtype() != DataType::kResource || tensor.dims() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must be a resource handle (a resource scalar), got ",
        tensor.TypeString()));
  }
  return &tensor.scalar<ResourceHandle>();
}

absl::StatusOr<std::shared_ptr<Var>> GetVariable(OpKernelContext* ctx,
                                                 const Tensor& handle_t,
                                                 bool create) {
  DF_ASSIGN_OR_RETURN(const ResourceHandle* handle,
                      ScalarHandle(handle_t, "the variable's handle"));
  const ResourceHandle& h = *handle;
  if (h.device != ctx->device()->name()) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable '", h.name, "' lives on ", h.device,
                     ", not on this device (", ctx->device()->name(),
                     "); ops that use a variable must be colocated "
                     "with it"));
  }
  ResourceMgr* rm = ctx->resource_manager();
  if (create) {
    return rm->LookupOrCreate<Var>(
        h.container, h.name, [&] { return std::make_shared<Var>(h.dtype); });
  }
  auto var = rm->Lookup<Var>(h.container, h.name);
  if (absl::IsNotFound(var.status())) return UninitializedError(h.name);
  return var;
}

namespace {

class ReadVariableOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  // Takes a reference to the value under the variable's lock: no copy.
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    auto var = GetVariable(ctx, ctx->input(0), /*create=*/false);
    DF_OP_REQUIRES_OK(ctx, var.status());
    absl::MutexLock lock((*var)->mu());
    // (GetVariable has checked that input 0 is a resource scalar.)
    DF_OP_REQUIRES(
        ctx, (*var)->is_initialized(),
        UninitializedError(ctx->input(0).scalar<ResourceHandle>().name));
    ctx->set_output(0, (*var)->value());
  }
};

enum class Update { kAssign, kAdd, kSub };

template <Update kUpdate>
class AssignVariableOp : public OpKernel {
 public:
  explicit AssignVariableOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    // The shape the variable was declared with, when the handle comes straight
    // from its VarHandleOp: a value of another shape must not replace it.
    const Node* producer = ctx->node().input(0).node;
    if (producer->op() == "VarHandleOp") {
      ctx->SetStatus(GetAttr(producer->attrs(), "shape", &declared_shape_));
    }
  }

  void Compute(OpKernelContext* ctx) override {
    auto handle = ScalarHandle(ctx->input(0), "input 0 (the variable)");
    DF_OP_REQUIRES_OK(ctx, handle.status());
    const ResourceHandle& h = **handle;
    const Tensor& value = ctx->input(1);
    // Add and subtract check the value against the variable's current shape
    // below.
    DF_OP_REQUIRES(
        ctx,
        kUpdate != Update::kAssign ||
            declared_shape_.IsCompatibleWith(value.shape()),
        absl::InvalidArgumentError(absl::StrCat(
            "cannot assign a value of shape ", value.shape().DebugString(),
            " to variable '", h.name, "' declared with shape ",
            declared_shape_.DebugString())));
    auto var =
        GetVariable(ctx, ctx->input(0), /*create=*/kUpdate == Update::kAssign);
    DF_OP_REQUIRES_OK(ctx, var.status());
    DF_OP_REQUIRES(ctx, value.dtype() == (*var)->dtype(),
                   absl::InvalidArgumentError(absl::StrCat(
                       "cannot assign ", value.TypeString(), " to variable '",
                       h.name, "' of type ", DataTypeName((*var)->dtype()))));
    absl::MutexLock lock((*var)->mu());
    if constexpr (kUpdate == Update::kAssign) {
      DF_OP_REQUIRES(
          ctx,
          !(*var)->is_initialized() || (*var)->value().shape() == value.shape(),
          absl::InvalidArgumentError(absl::StrCat(
              "cannot assign a value of shape ", value.shape().DebugString(),
              " to variable '", h.name, "' of shape ",
              (*var)->value().shape().DebugString())));
      (*var)->set_value(value);
    } else {
      DF_OP_REQUIRES(ctx, (*var)->is_initialized(), UninitializedError(h.name));
      DF_OP_REQUIRES(
          ctx, (*var)->value().shape() == value.shape(),
          absl::InvalidArgumentError(absl::StrCat(
              "cannot ", kUpdate == Update::kAdd ? "add" : "subtract",
              " a value of shape ", value.shape().DebugString(),
              kUpdate == Update::kAdd ? " to" : " from", " variable '", h.name,
              "' of shape ", (*var)->value().shape().DebugString())));
      Tensor* target = (*var)->mutable_value();
      DF_OP_REQUIRES_OK(ctx, VisitNumericType(value.dtype(), [&](auto tag) {
                          using T = typename decltype(tag)::type;
                          auto dst = target->flat<T>();
                          auto src = value.flat<T>();
                          for (size_t i = 0; i < dst.size(); ++i) {
                            dst[i] = kUpdate == Update::kAdd ? dst[i] + src[i]
                                                             : dst[i] - src[i];
                          }
                          return absl::OkStatus();
                        }));
    }
    ctx->set_output(0, (*var)->value());
  }

 private:
  PartialTensorShape declared_shape_;  // unknown rank when not known
};

class VarIsInitializedOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto handle = ScalarHandle(ctx->input(0), "input 0 (the variable)");
    DF_OP_REQUIRES_OK(ctx, handle.status());
    const ResourceHandle& h = **handle;
    auto var = ctx->resource_manager()->Lookup<Var>(h.container, h.name);
    bool initialized = false;
    if (var.ok()) {
      absl::MutexLock lock((*var)->mu());
      initialized = (*var)->is_initialized();
    }
    ctx->set_output(0, Tensor::Scalar(initialized));
  }
};

// Names the variables whose flag is false; the flags come from
// VarIsInitializedOp nodes beside each variable.
class ReportUninitializedVariablesOp : public OpKernel {
 public:
  explicit ReportUninitializedVariablesOp(OpKernelConstruction* ctx)
      : OpKernel(ctx) {
    ctx->SetStatus(ctx->GetAttr("var_names", &names_));
  }
  void Compute(OpKernelContext* ctx) override {
    std::vector<std::string> missing;
    DF_OP_REQUIRES(ctx, ctx->num_inputs() == static_cast<int>(names_.size()),
                   absl::InvalidArgumentError(
                       absl::StrCat("has ", ctx->num_inputs(), " flags but ",
                                    names_.size(), " variable names")));
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const Tensor& flag = ctx->input(i);
      DF_OP_REQUIRES(ctx, flag.dtype() == DataType::kBool && flag.dims() == 0,
                     absl::InvalidArgumentError(absl::StrCat(
                         "the flag of variable '", names_[i],
                         "' must be a bool scalar, got ", flag.TypeString())));
      if (!flag.scalar<bool>()) missing.push_back(names_[i]);
    }
    ctx->set_output(0, Tensor::Vector<std::string>(missing));
  }
  bool IsExpensive() const override { return false; }

 private:
  std::vector<std::string> names_;
};

}  // namespace

void RegisterStateKernels(KernelRegistry* r) {
  RegisterCpuKernel<VarHandleOp>(r, "VarHandleOp");
  RegisterCpuKernel<ReadVariableOp>(r, "ReadVariableOp");
  RegisterCpuKernel<AssignVariableOp<Update::kAssign>>(r, "AssignVariableOp");
  RegisterCpuKernel<AssignVariableOp<Update::kAdd>>(r, "AssignAddVariableOp");
  RegisterCpuKernel<AssignVariableOp<Update::kSub>>(r, "AssignSubVariableOp");
  RegisterCpuKernel<VarIsInitializedOp>(r, "VarIsInitializedOp");
  RegisterCpuKernel<ReportUninitializedVariablesOp>(
      r, "ReportUninitializedVariables");
}

}  // namespace distflow
