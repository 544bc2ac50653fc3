// The kernel interface: the code that computes one op on one device.
//
// A kernel is constructed once per node when an executor is built (reading
// attributes, failing early on bad ones) and then computes once per step,
// possibly from several steps at once, so Compute must be thread-safe. Errors
// go to the context's status; the executor adds the node name.
#ifndef DISTFLOW_KERNELS_OP_KERNEL_H_
#define DISTFLOW_KERNELS_OP_KERNEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/cancellation.h"
#include "base/thread_pool.h"
#include "distflow/tensor.h"
#include "graph/attr_value.h"
#include "graph/graph.h"
#include "kernels/rendezvous.h"
#include "kernels/resource_mgr.h"

namespace distflow {

// What a kernel knows of the device it runs on.
class DeviceBase {
 public:
  virtual ~DeviceBase() = default;
  // The full device name, such as /job:localhost/replica:0/task:0/device:CPU:0.
  virtual const std::string& name() const = 0;
  virtual ResourceMgr* resource_manager() = 0;
  // Threads for parallelism inside one kernel.
  virtual ThreadPool* intra_op_pool() = 0;
};

// Where _Arg kernels read fed tensors and _Retval kernels leave fetched ones.
class CallFrame {
 public:
  virtual ~CallFrame() = default;
  virtual absl::StatusOr<Tensor> GetArg(int index) const = 0;
  virtual absl::Status SetRetval(int index, const Tensor& value) = 0;
};

class OpKernelConstruction {
 public:
  OpKernelConstruction(const Node* node, DeviceBase* device)
      : node_(node), device_(device) {}

  const Node& node() const { return *node_; }
  DeviceBase* device() const { return device_; }
  template <typename T>
  absl::Status GetAttr(absl::string_view name, T* out) const {
    return distflow::GetAttr(node_->attrs(), name, out);
  }
  void SetStatus(const absl::Status& s) {
    if (status_.ok()) status_ = s;
  }
  const absl::Status& status() const { return status_; }

 private:
  const Node* node_;
  DeviceBase* device_;
  absl::Status status_;
};

// What OpKernelContext::allocate_output throws when it cannot allocate: a
// std::bad_alloc that says which tensor.
class TensorAllocationError : public std::bad_alloc {
 public:
  explicit TensorAllocationError(std::string message)
      : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

class OpKernelContext {
 public:
  struct Params {
    DeviceBase* device = nullptr;
    const std::vector<Tensor>* inputs = nullptr;
    CallFrame* call_frame = nullptr;
    CancellationManager* cancellation = nullptr;
    int64_t step_id = 0;
    // Where _Send and _Recv exchange tensors; null when the graph has none.
    Rendezvous* rendezvous = nullptr;
  };
  OpKernelContext(const Params& params, int num_outputs)
      : params_(params), outputs_(num_outputs) {}

  int num_inputs() const { return static_cast<int>(params_.inputs->size()); }
  const Tensor& input(int i) const { return (*params_.inputs)[i]; }

  void set_output(int i, Tensor value) { outputs_[i] = std::move(value); }
  // A new tensor of `dtype` and `shape` (elements unspecified) set as output i.
  // Throws TensorAllocationError (a std::bad_alloc naming the type and shape)
  // when the size is refused or the memory cannot be had; the executor fails
  // the step with RESOURCE_EXHAUSTED naming the node.
  Tensor* allocate_output(int i, DataType dtype, const TensorShape& shape) {
    absl::StatusOr<Tensor> t = Tensor::Create(dtype, shape, /*zero=*/false);
    if (!t.ok()) throw TensorAllocationError(std::string(t.status().message()));
    outputs_[i] = *std::move(t);
    return &outputs_[i];
  }
  std::vector<Tensor>& outputs() { return outputs_; }

  DeviceBase* device() const { return params_.device; }
  ResourceMgr* resource_manager() const {
    return params_.device->resource_manager();
  }
  ThreadPool* intra_op_pool() const { return params_.device->intra_op_pool(); }
  CallFrame* call_frame() const { return params_.call_frame; }
  CancellationManager* cancellation() const { return params_.cancellation; }
  int64_t step_id() const { return params_.step_id; }
  Rendezvous* rendezvous() const { return params_.rendezvous; }

  void SetStatus(const absl::Status& s) {
    if (status_.ok()) status_ = s;
  }
  const absl::Status& status() const { return status_; }

 private:
  Params params_;
  std::vector<Tensor> outputs_;
  absl::Status status_;
};

class AsyncOpKernel;

class OpKernel {
 public:
  explicit OpKernel(OpKernelConstruction* ctx);
  virtual ~OpKernel() = default;

  virtual void Compute(OpKernelContext* ctx) = 0;
  // Cheap kernels run inline on the executor's thread instead of being
  // scheduled. The executor also runs an expensive kernel inline once it
  // has shown that it runs quickly (Executor::IsExpensive), so Compute must
  // never wait for another node of its step: a kernel that waits is an
  // AsyncOpKernel.
  virtual bool IsExpensive() const { return true; }
  virtual AsyncOpKernel* AsAsync() { return nullptr; }

  const std::string& name() const { return name_; }
  const std::string& type() const { return type_; }
  DataType output_type(int i) const { return output_types_[i]; }
  int num_outputs() const { return static_cast<int>(output_types_.size()); }

 private:
  std::string name_;
  std::string type_;
  std::vector<DataType> output_types_;
};

// A kernel that finishes later (waiting on the network or another step) without
// holding a thread: it calls `done` exactly once when finished, after setting
// outputs or an error.
class AsyncOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  virtual void ComputeAsync(OpKernelContext* ctx,
                            std::function<void()> done) = 0;
  void Compute(OpKernelContext* ctx) override;
  AsyncOpKernel* AsAsync() override { return this; }
};

}  // namespace distflow

// Sets the error on `ctx` and returns from the enclosing (void) function if
// `status` is not OK.
#define DF_OP_REQUIRES_OK(ctx, status_expr)       \
  do {                                            \
    ::absl::Status df_op_status_ = (status_expr); \
    if (!df_op_status_.ok()) {                    \
      (ctx)->SetStatus(df_op_status_);            \
      return;                                     \
    }                                             \
  } while (0)

// Sets `error` on `ctx` and returns if `condition` is false.
#define DF_OP_REQUIRES(ctx, condition, error) \
  do {                                        \
    if (!(condition)) {                       \
      (ctx)->SetStatus(error);                \
      return;                                 \
    }                                         \
  } while (0)

#endif  // DISTFLOW_KERNELS_OP_KERNEL_H_
