// Gradient accumulators: the resources behind synchronous training. Each
// lives beside its variable (on its ps task); workers add gradients, the chief
// takes their average once enough have arrived.
//
// An accumulator has a global step. A gradient computed at a local step older
// than it is stale and dropped; taking the average advances the step by one, so
// that gradients of the round just taken are dropped from then on. Gradients
// are summed in double precision whatever their type.
#ifndef DISTFLOW_KERNELS_ACCUMULATOR_H_
#define DISTFLOW_KERNELS_ACCUMULATOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "distflow/tensor.h"
#include "kernels/resource_mgr.h"
#include "kernels/wait_list.h"

namespace distflow {

class Accumulator : public ResourceBase {
 public:
  // The average handed to a take: one tensor for a dense accumulator;
  // indices, values and dense shape for a sparse one.
  using Result = std::vector<Tensor>;
  using TakeDone = std::function<void(const absl::Status&, Result)>;

  Accumulator(std::string name, DataType dtype, PartialTensorShape shape);
  ~Accumulator() override = default;

  const std::string& name() const { return name_; }
  DataType dtype() const { return dtype_; }
  const PartialTensorShape& declared_shape() const { return declared_shape_; }
  virtual bool is_sparse() const = 0;

  // Adds `gradient` (dense: {gradient}; sparse: {indices, values}) computed at
  // `local_step`. Returns false, adding nothing, if it is stale.
  // INVALID_ARGUMENT naming the accumulator and the shapes if it does not fit.
  // May serve a waiting take.
  absl::StatusOr<bool> Apply(int64_t local_step,
                             const std::vector<Tensor>& gradient);
  // Waits (without a thread) until `num_required` gradients have arrived, then
  // hands `done` their average and starts a new round. CANCELLED when the
  // accumulator is closed or the step cancelled; INVALID_ARGUMENT if
  // num_required < 1.
  void Take(int64_t num_required, CancellationManager* cancellation,
            std::shared_ptr<Accumulator> self, TakeDone done);
  // Sets the global step (the chief's start of training) and opens a closed
  // accumulator again.
  void SetGlobalStep(int64_t step);
  // Fails pending and later takes with CANCELLED until SetGlobalStep: how a
  // chief's aggregation loop is stopped.
  void Close();
  int NumAccumulated() const;
  int64_t global_step() const;

  std::string DebugString() const override;

 protected:
  // Adds a gradient already checked against the accumulator's shape.
  virtual absl::Status AddLocked(const std::vector<Tensor>& gradient)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;
  // The average of the `count_` gradients added, then clears the sum.
  virtual Result TakeAverageLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;

  // The accumulator's name and shape, for error messages.
  std::string Describe() const;

  const std::string name_;
  const DataType dtype_;
  const PartialTensorShape declared_shape_;
  mutable absl::Mutex mu_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;

 private:
  int64_t global_step_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  WaitList takers_ ABSL_GUARDED_BY(mu_){&mu_};
};

// Averages dense gradients of one shape (the declared one, or the first
// gradient's when the declared shape is partial). A round's first
// kHeldGradients gradients are held, not copied, and the take averages them
// in one pass, reading each once (a synchronous step of a few workers never
// writes a sum); the next one starts a sum in double.
class DenseAccumulator : public Accumulator {
 public:
  using Accumulator::Accumulator;
  bool is_sparse() const override { return false; }

 protected:
  absl::Status AddLocked(const std::vector<Tensor>& gradient) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Result TakeAverageLocked() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

 private:
  static constexpr int kHeldGradients = 4;
  TensorShape shape_ ABSL_GUARDED_BY(mu_);
  bool has_shape_ ABSL_GUARDED_BY(mu_) = false;
  // while count_ <= kHeldGradients
  std::vector<Tensor> held_ ABSL_GUARDED_BY(mu_);
  // while count_ > kHeldGradients
  std::vector<double> sum_ ABSL_GUARDED_BY(mu_);
};

// Sums sparse gradients (IndexedSlices) row by row. The average divides
// every row by the number of gradients, as the dense accumulator of the same
// gradients made dense would: a row that a gradient does not list counts as
// zero for it. Taken indices are sorted and unique.
class SparseAccumulator : public Accumulator {
 public:
  using Accumulator::Accumulator;
  bool is_sparse() const override { return true; }

 protected:
  absl::Status AddLocked(const std::vector<Tensor>& gradient) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Result TakeAverageLocked() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

 private:
  // The shape of one row: the declared shape without its first dimension,
  // else the first gradient's.
  std::vector<int64_t> row_shape_ ABSL_GUARDED_BY(mu_);
  bool has_row_shape_ ABSL_GUARDED_BY(mu_) = false;
  int64_t row_size_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<int64_t, std::vector<double>> rows_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distflow

#endif  // DISTFLOW_KERNELS_ACCUMULATOR_H_
