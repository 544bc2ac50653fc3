// Staleness barrier kernels: per-worker step counters on a ps task that keep
// asynchronous workers within a bounded number of steps of each other (stale
// synchronous parallel).
//
// A worker that finishes step c advances its counter to c and then waits until
// every other active worker has finished step c - max_staleness, so while it
// runs step c + 1 the slowest worker runs step c - max_staleness + 1 or later:
// no worker runs more than max_staleness steps ahead of the slowest.
// max_staleness = 0 is a full barrier per step.
#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/kernel_families.h"
#include "kernels/resource_handle_util.h"
#include "kernels/wait_list.h"

namespace distflow {
namespace {

constexpr char kKind[] = "staleness barrier";

class StalenessBarrier : public ResourceBase {
 public:
  StalenessBarrier(std::string name, int num_workers, int64_t max_staleness)
      : name_(std::move(name)),
        max_staleness_(max_staleness),
        num_workers_(num_workers),
        steps_(num_workers, 0),
        retired_(num_workers, false) {}

  int num_workers() const { return num_workers_; }
  int64_t max_staleness() const { return max_staleness_; }

  // Counts a finished step of `worker` and hands `done` its new count once the
  // slowest active worker is close enough.
  void Advance(int worker, CancellationManager* cancellation,
               std::shared_ptr<StalenessBarrier> self,
               std::function<void(const absl::Status&, int64_t)> done) {
    Wakeups wakeups;
    absl::MutexLock lock(&mu_);
    const int64_t step = ++steps_[worker];
    retired_[worker] = false;  // a worker that comes back takes part again
    waiters_.AssertHeld();
    waiters_.Notify(&wakeups);  // this worker may have been the slowest
    auto serve = [this, step]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return SlowestLocked() >= step - max_staleness_;
    };
    waiters_.Wait(
        cancellation, std::move(self),
        absl::StrCat("the slowest worker to reach step ", step - max_staleness_,
                     " in ", DebugString()),
        std::move(serve),
        [done = std::move(done), step](const absl::Status& s) {
          done(s, step);
        },
        &wakeups);
    waiters_.Notify(&wakeups);
  }

  // Leaves `worker` out of the slowest from now on (it finished training), so
  // that the others do not wait for it.
  void Retire(int worker) {
    Wakeups wakeups;
    absl::MutexLock lock(&mu_);
    retired_[worker] = true;
    waiters_.AssertHeld();
    waiters_.Notify(&wakeups);
  }

  std::vector<int64_t> Steps() const {
    absl::MutexLock lock(&mu_);
    return steps_;
  }

  std::string DebugString() const override {
    return absl::StrCat("staleness barrier '", name_, "' of ", num_workers(),
                        " workers, max staleness ", max_staleness_);
  }

 private:
  int64_t SlowestLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    int64_t slowest = std::numeric_limits<int64_t>::max();
    for (size_t i = 0; i < steps_.size(); ++i) {
      if (!retired_[i]) slowest = std::min(slowest, steps_[i]);
    }
    return slowest;
  }

  const std::string name_;
  const int64_t max_staleness_;
  const int num_workers_;  // the size of steps_ and retired_
  mutable absl::Mutex mu_;
  std::vector<int64_t> steps_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> retired_ ABSL_GUARDED_BY(mu_);
  WaitList waiters_ ABSL_GUARDED_BY(mu_){&mu_};
};

class StalenessBarrierOp : public OpKernel {
 public:
  explicit StalenessBarrierOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    std::string shared_name;
    ctx->SetStatus(ctx->GetAttr("num_workers", &num_workers_));
    ctx->SetStatus(ctx->GetAttr("max_staleness", &max_staleness_));
    ctx->SetStatus(ctx->GetAttr("container", &container_));
    ctx->SetStatus(ctx->GetAttr("shared_name", &shared_name));
    name_ = shared_name.empty() ? name() : shared_name;
  }
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    auto handle = LookupOrCreateFromHandleOp<StalenessBarrier>(
        ctx, container_, name_, DataType::kInt64,
        [&] {
          return std::make_shared<StalenessBarrier>(name_, num_workers_,
                                                    max_staleness_);
        },
        [&](const StalenessBarrier& b) {
          if (b.num_workers() == num_workers_ &&
              b.max_staleness() == max_staleness_) {
            return absl::OkStatus();
          }
          return absl::InvalidArgumentError(absl::StrCat(
              "StalenessBarrier '", name(), "' declares ", num_workers_,
              " workers and max staleness ", max_staleness_, " but ",
              b.DebugString(),
              " already exists: every worker must build it alike"));
        });
    DF_OP_REQUIRES_OK(ctx, handle.status());
    ctx->set_output(0, *handle);
  }

 private:
  int num_workers_ = 0;
  int64_t max_staleness_ = 0;
  std::string container_;
  std::string name_;
};

// The barrier of input 0 and the "worker" attribute, checked against it.
absl::StatusOr<std::shared_ptr<StalenessBarrier>> GetBarrier(
    OpKernelContext* ctx, const OpKernel& op, int worker) {
  auto b = LookupResourceFromInput<StalenessBarrier>(ctx, 0, kKind);
  if (!b.ok()) return b.status();
  if (worker >= (*b)->num_workers()) {
    return absl::InvalidArgumentError(absl::StrCat(
        op.type(), " '", op.name(), "' is for worker ", worker, " but ",
        (*b)->DebugString(), " counts workers 0 to ", (*b)->num_workers() - 1));
  }
  return b;
}

class AdvanceOp : public AsyncOpKernel {
 public:
  explicit AdvanceOp(OpKernelConstruction* ctx) : AsyncOpKernel(ctx) {
    ctx->SetStatus(ctx->GetAttr("worker", &worker_));
  }
  void ComputeAsync(OpKernelContext* ctx, std::function<void()> done) override {
    auto b = GetBarrier(ctx, *this, worker_);
    if (!b.ok()) {
      ctx->SetStatus(b.status());
      done();
      return;
    }
    (*b)->Advance(worker_, ctx->cancellation(), *b,
                  [ctx, done](const absl::Status& s, int64_t step) {
                    if (s.ok()) {
                      ctx->set_output(0, Tensor::Scalar<int64_t>(step));
                    } else {
                      ctx->SetStatus(s);
                    }
                    done();
                  });
  }

 private:
  int worker_ = 0;
};

class RetireOp : public OpKernel {
 public:
  explicit RetireOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    ctx->SetStatus(ctx->GetAttr("worker", &worker_));
  }
  void Compute(OpKernelContext* ctx) override {
    auto b = GetBarrier(ctx, *this, worker_);
    DF_OP_REQUIRES_OK(ctx, b.status());
    (*b)->Retire(worker_);
  }

 private:
  int worker_ = 0;
};

class StepsOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto b = LookupResourceFromInput<StalenessBarrier>(ctx, 0, kKind);
    DF_OP_REQUIRES_OK(ctx, b.status());
    ctx->set_output(0, Tensor::Vector<int64_t>((*b)->Steps()));
  }
};

}  // namespace

void RegisterStalenessKernels(KernelRegistry* r) {
  RegisterCpuKernel<StalenessBarrierOp>(r, "StalenessBarrier");
  RegisterCpuKernel<AdvanceOp>(r, "StalenessBarrierAdvance");
  RegisterCpuKernel<RetireOp>(r, "StalenessBarrierRetire");
  RegisterCpuKernel<StepsOp>(r, "StalenessBarrierSteps");
}

}  // namespace distflow
