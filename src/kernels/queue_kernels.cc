// FIFO queue kernels: an unbounded first-in first-out queue of tensors of one
// dtype and element shape (the token queue of synchronous training). Dequeue
// waits without holding a thread; closing the queue, or cancelling the step,
// wakes it with an error.
#include <deque>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/kernel_families.h"
#include "kernels/resource_handle_util.h"
#include "kernels/wait_list.h"

namespace distflow {
namespace {

constexpr char kKind[] = "queue";

class FifoQueue : public ResourceBase {
 public:
  FifoQueue(std::string name, DataType dtype, PartialTensorShape shape)
      : name_(std::move(name)), dtype_(dtype), shape_(std::move(shape)) {}

  DataType dtype() const { return dtype_; }
  const PartialTensorShape& declared_shape() const { return shape_; }

  // Appends `elements`; CANCELLED if the queue is closed, INVALID_ARGUMENT
  // naming the queue if an element does not fit.
  absl::Status Enqueue(const std::vector<Tensor>& elements) {
    for (const Tensor& e : elements) {
      if (e.dtype() != dtype_ ||
          !shape_.IsCompatibleWith(PartialTensorShape(e.shape()))) {
        return absl::InvalidArgumentError(absl::StrCat(
            DebugString(), " cannot hold an element ", e.TypeString()));
      }
    }
    Wakeups wakeups;
    absl::MutexLock lock(&mu_);
    if (closed_) {
      return absl::CancelledError(
          absl::StrCat(DebugString(), " is closed: enqueue refused"));
    }
    elements_.insert(elements_.end(), elements.begin(), elements.end());
    dequeuers_.AssertHeld();
    dequeuers_.Notify(&wakeups);
    return absl::OkStatus();
  }

  // Hands `done` the first element once there is one; OUT_OF_RANGE once the
  // queue is closed and empty; CANCELLED if the step is cancelled first.
  void Dequeue(CancellationManager* cancellation,
               std::shared_ptr<FifoQueue> self,
               std::function<void(const absl::Status&, Tensor)> done) {
    auto element = std::make_shared<Tensor>();
    Wakeups wakeups;
    absl::MutexLock lock(&mu_);
    if (elements_.empty() && closed_) {
      wakeups.Add([done, e = ClosedError()] { done(e, Tensor()); });
      return;
    }
    auto serve = [this, element]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      if (elements_.empty()) return false;
      *element = std::move(elements_.front());
      elements_.pop_front();
      return true;
    };
    dequeuers_.AssertHeld();
    dequeuers_.Wait(
        cancellation, std::move(self),
        absl::StrCat("an element of ", DebugString()), std::move(serve),
        [element, done = std::move(done)](const absl::Status& s) {
          done(s, s.ok() ? std::move(*element) : Tensor());
        },
        &wakeups);
    dequeuers_.Notify(&wakeups);
  }

  // Refuses later enqueues; waiting and later dequeues of an empty queue fail
  // with OUT_OF_RANGE. Elements already queued can still be dequeued.
  void Close() {
    Wakeups wakeups;
    absl::MutexLock lock(&mu_);
    closed_ = true;
    // Waiters exist only while the queue is empty.
    dequeuers_.AssertHeld();
    dequeuers_.FailAll(ClosedError(), &wakeups);
  }

  int Size() const {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(elements_.size());
  }

  std::string DebugString() const override {
    return absl::StrCat("queue '", name_, "' of ", DataTypeName(dtype_),
                        shape_.DebugString());
  }

 private:
  absl::Status ClosedError() const {
    return absl::OutOfRangeError(
        absl::StrCat(DebugString(), " is closed and empty"));
  }

  const std::string name_;
  const DataType dtype_;
  const PartialTensorShape shape_;
  mutable absl::Mutex mu_;
  std::deque<Tensor> elements_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  WaitList dequeuers_ ABSL_GUARDED_BY(mu_){&mu_};
};

class EnqueueOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto q = LookupResourceFromInput<FifoQueue>(ctx, 0, kKind);
    DF_OP_REQUIRES_OK(ctx, q.status());
    DF_OP_REQUIRES_OK(ctx, (*q)->Enqueue({ctx->input(1)}));
  }
};

// Enqueues every slice of the input along dimension 0.
class EnqueueManyOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto q = LookupResourceFromInput<FifoQueue>(ctx, 0, kKind);
    DF_OP_REQUIRES_OK(ctx, q.status());
    const Tensor& all = ctx->input(1);
    DF_OP_REQUIRES(ctx, all.dims() >= 1,
                   absl::InvalidArgumentError(absl::StrCat(
                       "QueueEnqueueMany needs elements stacked along a first "
                       "dimension, got a scalar ",
                       all.TypeString())));
    auto element_shape = TensorShape::FromDims(absl::MakeConstSpan(
        all.shape().dim_sizes().data() + 1, all.dims() - 1));
    DF_OP_REQUIRES_OK(ctx, element_shape.status());
    std::vector<Tensor> elements;
    for (int64_t i = 0; i < all.dim_size(0); ++i) {
      auto e = all.Slice(i, i + 1).Reshape(*element_shape);
      DF_OP_REQUIRES_OK(ctx, e.status());
      elements.push_back(*std::move(e));
    }
    DF_OP_REQUIRES_OK(ctx, (*q)->Enqueue(elements));
  }
};

class DequeueOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* ctx, std::function<void()> done) override {
    auto q = LookupResourceFromInput<FifoQueue>(ctx, 0, kKind);
    if (!q.ok()) {
      ctx->SetStatus(q.status());
      done();
      return;
    }
    (*q)->Dequeue(ctx->cancellation(), *q,
                  [ctx, done](const absl::Status& s, Tensor element) {
                    if (s.ok()) {
                      ctx->set_output(0, std::move(element));
                    } else {
                      ctx->SetStatus(s);
                    }
                    done();
                  });
  }
};

class QueueSizeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto q = LookupResourceFromInput<FifoQueue>(ctx, 0, kKind);
    DF_OP_REQUIRES_OK(ctx, q.status());
    ctx->set_output(0, Tensor::Scalar<int32_t>((*q)->Size()));
  }
};

class QueueCloseOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto q = LookupResourceFromInput<FifoQueue>(ctx, 0, kKind);
    DF_OP_REQUIRES_OK(ctx, q.status());
    (*q)->Close();
  }
};

}  // namespace

void RegisterQueueKernels(KernelRegistry* r) {
  RegisterCpuKernel<DeclaredResourceHandleOp<FifoQueue>>(r, "FIFOQueue");
  RegisterCpuKernel<EnqueueOp>(r, "QueueEnqueue");
  RegisterCpuKernel<EnqueueManyOp>(r, "QueueEnqueueMany");
  RegisterCpuKernel<DequeueOp>(r, "QueueDequeue");
  RegisterCpuKernel<QueueSizeOp>(r, "QueueSize");
  RegisterCpuKernel<QueueCloseOp>(r, "QueueClose");
}

}  // namespace distflow
