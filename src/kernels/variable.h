// The resource behind a variable: a tensor guarded by a mutex.
#ifndef DISTFLOW_KERNELS_VARIABLE_H_
#define DISTFLOW_KERNELS_VARIABLE_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "distflow/tensor.h"
#include "kernels/resource_mgr.h"

namespace distflow {

// Reads hand out the current tensor without copying. Updates never change a
// tensor a reader may still hold: an update in place happens only when the
// variable is the buffer's sole owner; otherwise it writes a fresh buffer (copy
// on write).
class Var : public ResourceBase {
 public:
  explicit Var(DataType dtype) : dtype_(dtype) {}

  DataType dtype() const { return dtype_; }
  absl::Mutex* mu() const ABSL_LOCK_RETURNED(mu_) { return &mu_; }
  bool is_initialized() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return initialized_;
  }
  const Tensor& value() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return value_;
  }
  void set_value(Tensor value) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    value_ = std::move(value);
    initialized_ = true;
  }
  // The value, ready to be written in place: copied first if anyone else holds
  // its buffer, or another process reads it.
  Tensor* mutable_value() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The value, ready to be overwritten whole by an update that reads
  // `*previous` as it writes: the value itself (and `*previous` the same
  // tensor) where nobody else holds its buffer; otherwise a fresh buffer of
  // unspecified elements, and `*previous` the value it replaces. An update
  // that copies each block of `*previous` just before it updates the block
  // reads the old value once, where copying it whole first read it twice.
  Tensor* value_for_overwrite(Tensor* previous)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::string DebugString() const override;

 private:
  // Whether anyone else holds the value's buffer, in this process or another.
  bool ValueShared() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const DataType dtype_;
  mutable absl::Mutex mu_;
  Tensor value_ ABSL_GUARDED_BY(mu_);
  bool initialized_ ABSL_GUARDED_BY(mu_) = false;
};

class OpKernelContext;

// The handle that `tensor`, an input of a kernel, holds. INVALID_ARGUMENT
// naming `what` (such as "input 0 (the variable)") unless `tensor` is a
// resource scalar: a graph may feed anything where a handle is expected.
absl::StatusOr<const ResourceHandle*> ScalarHandle(const Tensor& tensor,
                                                   absl::string_view what);

// The variable that `handle` (a scalar resource tensor) names on the kernel's
// device, created uninitialized on first use when `create` is set.
// INVALID_ARGUMENT if `handle` is not a resource scalar or belongs to another
// device; FAILED_PRECONDITION
// naming the variable if it does not exist and `create` is false.
absl::StatusOr<std::shared_ptr<Var>> GetVariable(OpKernelContext* ctx,
                                                 const Tensor& handle,
                                                 bool create);

}  // namespace distflow

#endif  // DISTFLOW_KERNELS_VARIABLE_H_
