// Finding the resource a handle input names, for kernels of resources other
// than variables (queues, accumulators, barriers).
#ifndef DISTFLOW_KERNELS_RESOURCE_HANDLE_UTIL_H_
#define DISTFLOW_KERNELS_RESOURCE_HANDLE_UTIL_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "kernels/op_kernel.h"

namespace distflow {

// The resource of type T that input `index` of `ctx` (a kResource scalar)
// names. `kind` ("queue", "accumulator") words the errors:
// INVALID_ARGUMENT if the resource lives on another device (the op must be
// colocated with it) or is of another type, FAILED_PRECONDITION if it does
// not exist (its handle op has not run on this task).
template <typename T>
absl::StatusOr<std::shared_ptr<T>> LookupResourceFromInput(OpKernelContext* ctx,
                                                           int index,
                                                           const char* kind) {
  const Tensor& t = ctx->input(index);
  if (t.dtype() != DataType::kResource || t.NumElements() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", index, " must be a ", kind,
                     " handle (a resource scalar), got ", t.TypeString()));
  }
  const ResourceHandle& h = t.scalar<ResourceHandle>();
  if (h.device != ctx->device()->name()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kind, " '", h.name, "' lives on ", h.device, ", not on this device (",
        ctx->device()->name(), "); ops that use a ", kind,
        " must be colocated with its handle"));
  }
  auto r = ctx->resource_manager()->Lookup<T>(h.container, h.name);
  if (absl::IsNotFound(r.status())) {
    return absl::FailedPreconditionError(
        absl::StrCat(kind, " '", h.name, "' does not exist on ",
                     ctx->device()->name(), ": its handle op creates it"));
  }
  return r;
}

// The handle op's side: the resource `name` of `container` on this device,
// created with `create` if absent, and a handle tensor naming it. `check`
// compares an existing resource with what the handle op declares (another
// program may have created it differently).
template <typename T>
absl::StatusOr<Tensor> LookupOrCreateFromHandleOp(
    OpKernelContext* ctx, const std::string& container, const std::string& name,
    DataType dtype, const std::function<std::shared_ptr<T>()>& create,
    const std::function<absl::Status(const T&)>& check) {
  auto r = ctx->resource_manager()->LookupOrCreate<T>(container, name, create);
  if (!r.ok()) return r.status();
  absl::Status s = check(**r);
  if (!s.ok()) return s;
  return Tensor::Scalar(
      ResourceHandle{ctx->device()->name(), container, name, dtype});
}

// The kernel of a handle op whose resource is declared by its attrs dtype and
// shape (accumulators, queues): the first run creates the resource; a later
// run, or another op with the same shared_name, must declare a compatible
// dtype and shape. T needs T(name, dtype, shape), dtype(), declared_shape()
// and DebugString().
template <typename T>
class DeclaredResourceHandleOp : public OpKernel {
 public:
  explicit DeclaredResourceHandleOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    std::string shared_name;
    ctx->SetStatus(ctx->GetAttr("dtype", &dtype_));
    ctx->SetStatus(ctx->GetAttr("shape", &shape_));
    ctx->SetStatus(ctx->GetAttr("container", &container_));
    ctx->SetStatus(ctx->GetAttr("shared_name", &shared_name));
    name_ = shared_name.empty() ? name() : shared_name;
  }
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    auto handle = LookupOrCreateFromHandleOp<T>(
        ctx, container_, name_, dtype_,
        [&] { return std::make_shared<T>(name_, dtype_, shape_); },
        [&](const T& existing) {
          if (existing.dtype() == dtype_ &&
              existing.declared_shape().IsCompatibleWith(shape_)) {
            return absl::OkStatus();
          }
          return absl::InvalidArgumentError(absl::StrCat(
              type(), " '", name(), "' declares ", DataTypeName(dtype_),
              shape_.DebugString(), " but ", existing.DebugString(),
              " already exists under that name; use another shared_name"));
        });
    DF_OP_REQUIRES_OK(ctx, handle.status());
    ctx->set_output(0, *handle);
  }

 private:
  DataType dtype_ = DataType::kInvalid;
  PartialTensorShape shape_;
  std::string container_;
  std::string name_;
};

}  // namespace distflow

#endif  // DISTFLOW_KERNELS_RESOURCE_HANDLE_UTIL_H_
