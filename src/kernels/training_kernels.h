// The machinery shared by the optimizer update kernels (ResourceApply* and
// ResourceSparseApply*): finding and locking the variables, checking shapes,
// and running an elementwise update over the whole variable (dense) or over
// the listed rows (sparse), split across the intra-op pool.
//
// Each optimizer supplies only its elementwise update, a class with
//   static constexpr int kNumVars;   // the variable and its slots
//   static constexpr int kCost;      // rough cycles per element
//   explicit Update(OpKernelConstruction* ctx);   // reads attributes
//   template <typename T>
//   void operator()(const T* scalars, T* const* vars, const T* grad,
//                   int64_t n) const;
// where `scalars` are the op's hyperparameter inputs in op order, vars[k]
// points at n consecutive elements of variable k (0: the variable, then its
// slots) and grad at the n matching gradient elements. The update must be
// elementwise: the sparse kernel calls it once per row, the dense one once per
// block of kUpdateBlockBytes.
#ifndef DISTFLOW_KERNELS_TRAINING_KERNELS_H_
#define DISTFLOW_KERNELS_TRAINING_KERNELS_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "kernels/kernel_registry.h"
#include "kernels/op_kernel.h"
#include "kernels/variable.h"

namespace distflow {

// Views of n elements for the update functions.
template <typename T>
using FlatMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstFlatMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// The elements of each array that a dense update handles at a time (see
// ApplyUpdateOp): four arrays of 4 KiB (Adam's) fit a core's first-level
// cache with room to spare.
inline constexpr int64_t kUpdateBlockBytes = 4096;

namespace training_internal {

// Where the inputs of a training op are, read from its op definition (the
// layout is documented in graph/ops/training_ops.cc).
struct InputLayout {
  std::vector<int> vars;     // resource inputs: variable, then slots
  std::vector<int> scalars;  // hyperparameters, in op order
  int grad = -1;
  int indices = -1;                // sparse forms only
  std::vector<std::string> names;  // every input's name, for errors

  static InputLayout FromNode(const Node& node);
};

// The variables a training op updates, locked for its lifetime in a fixed
// (address) order so that two updates sharing variables cannot deadlock.
class LockedVars {
 public:
  LockedVars() = default;
  ~LockedVars();
  LockedVars(const LockedVars&) = delete;
  LockedVars& operator=(const LockedVars&) = delete;

  // Looks up the variables of the op's resource inputs, locks them, checks
  // that they are initialized, of dtype `dtype`, and that every slot has the
  // variable's shape. Errors name the variable (and slot) at fault.
  absl::Status Acquire(OpKernelContext* ctx, const InputLayout& layout,
                       DataType dtype);

  // The name of the updated variable (input 0), for error messages.
  const std::string& name() const { return names_[0]; }
  // The current value of variable k (0: the variable); locked.
  const Tensor& value(int k) const;
  // Variable k's value, ready to be written in place.
  Tensor* mutable_value(int k);
  // Variable k's value, ready to be overwritten from `*previous`
  // (Var::value_for_overwrite).
  Tensor* value_for_overwrite(int k, Tensor* previous);

 private:
  std::vector<std::shared_ptr<Var>> vars_;
  std::vector<std::string> names_;
  std::vector<absl::Mutex*> locked_;  // in locking order
};

// Checks that every hyperparameter input is a scalar and gathers their
// values; errors name the hyperparameter and the variable.
template <typename T>
absl::Status GatherScalars(OpKernelContext* ctx, const InputLayout& layout,
                           const std::string& var_name,
                           std::vector<T>* scalars) {
  for (int i : layout.scalars) {
    const Tensor& t = ctx->input(i);
    if (t.dims() != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hyperparameter '", layout.names[i], "' of the update of variable '",
          var_name, "' must be a scalar, got shape ", t.shape().DebugString()));
    }
    scalars->push_back(t.scalar<T>());
  }
  return absl::OkStatus();
}

// The unique rows of a sparse update and, for each, where its gradient row
// is: rows listed several times get the sum of their gradient rows.
template <typename T>
struct UniqueRows {
  std::vector<int64_t> rows;
  std::vector<T> summed;  // [rows.size(), row_size] when there were repeats
  const T* grad = nullptr;
  const T* grad_row(int64_t u, int64_t row_size) const {
    return (summed.empty() ? grad : summed.data()) + u * row_size;
  }
};

// Validates `indices` (int32 or int64 vector) against the variable's
// `num_rows` and gathers the unique rows of `grad` ([n, row_size]).
template <typename T>
absl::Status GroupRows(const Tensor& indices, const T* grad, int64_t row_size,
                       int64_t num_rows, const std::string& var_name,
                       UniqueRows<T>* out);

// Runs `fn(begin, end)` over [0, n) units of `cost` cycles each on the
// intra-op pool.
void ParallelRange(OpKernelContext* ctx, int64_t n, int64_t cost,
                   const std::function<void(int64_t, int64_t)>& fn);

// Checks the sparse gradient and index shapes against the variable.
absl::Status CheckSparseShapes(const Tensor& var, const Tensor& grad,
                               const Tensor& indices,
                               const std::string& var_name);

}  // namespace training_internal

// The kernel of a training op, dense or sparse, for the update `Update`.
template <typename Update, bool kSparse>
class ApplyUpdateOp : public OpKernel {
 public:
  explicit ApplyUpdateOp(OpKernelConstruction* ctx)
      : OpKernel(ctx),
        layout_(training_internal::InputLayout::FromNode(ctx->node())),
        update_(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    const DataType dtype = ctx->input(layout_.grad).dtype();
    switch (dtype) {
      case DataType::kFloat:
        return ComputeTyped<float>(ctx);
      case DataType::kDouble:
        return ComputeTyped<double>(ctx);
      default:
        ctx->SetStatus(absl::InvalidArgumentError(
            absl::StrCat(type(), " supports float32 and float64, got ",
                         DataTypeName(dtype))));
    }
  }

 private:
  template <typename T>
  void ComputeTyped(OpKernelContext* ctx) {
    using training_internal::LockedVars;
    LockedVars vars;
    DF_OP_REQUIRES_OK(ctx, vars.Acquire(ctx, layout_, DataTypeOf<T>::value));
    std::vector<T> scalars;
    DF_OP_REQUIRES_OK(ctx, training_internal::GatherScalars<T>(
                               ctx, layout_, vars.name(), &scalars));
    const Tensor& grad = ctx->input(layout_.grad);
    if constexpr (kSparse) {
      const Tensor& indices = ctx->input(layout_.indices);
      DF_OP_REQUIRES_OK(ctx, training_internal::CheckSparseShapes(
                                 vars.value(0), grad, indices, vars.name()));
      const int64_t num_rows = vars.value(0).dim_size(0);
      const int64_t row_size =
          num_rows == 0 ? 0 : vars.value(0).NumElements() / num_rows;
      training_internal::UniqueRows<T> unique;
      DF_OP_REQUIRES_OK(ctx, training_internal::GroupRows<T>(
                                 indices, grad.data<T>(), row_size, num_rows,
                                 vars.name(), &unique));
      std::array<T*, Update::kNumVars> base;
      for (int k = 0; k < Update::kNumVars; ++k) {
        base[k] = vars.mutable_value(k)->template data<T>();
      }
      training_internal::ParallelRange(
          ctx, static_cast<int64_t>(unique.rows.size()),
          Update::kCost * row_size, [&](int64_t begin, int64_t end) {
            std::array<T*, Update::kNumVars> at;
            for (int64_t u = begin; u < end; ++u) {
              for (int k = 0; k < Update::kNumVars; ++k) {
                at[k] = base[k] + unique.rows[u] * row_size;
              }
              update_(scalars.data(), at.data(), unique.grad_row(u, row_size),
                      row_size);
            }
          });
    } else {
      DF_OP_REQUIRES(ctx, grad.shape() == vars.value(0).shape(),
                     absl::InvalidArgumentError(absl::StrCat(
                         "gradient of shape ", grad.shape().DebugString(),
                         " does not fit variable '", vars.name(), "' of shape ",
                         vars.value(0).shape().DebugString())));
      // A variable whose value someone else still reads (a step's forward
      // pass, another task) is written into a fresh buffer, each block
      // copied from the old value just before it is updated.
      std::array<Tensor, Update::kNumVars> previous;
      std::array<T*, Update::kNumVars> base;
      std::array<const T*, Update::kNumVars> from;
      for (int k = 0; k < Update::kNumVars; ++k) {
        base[k] = vars.value_for_overwrite(k, &previous[k])->template data<T>();
        from[k] = previous[k].template data<T>();
      }
      const T* g = grad.data<T>();
      // An update is a few passes over its arrays (Adam: one per slot, then
      // the variable). Over a whole large variable each pass fetches its
      // arrays from the outer caches again; a block of kUpdateBlockBytes per
      // array stays in the first-level cache for all of them.
      constexpr int64_t kBlock = kUpdateBlockBytes / sizeof(T);
      training_internal::ParallelRange(
          ctx, grad.NumElements(), Update::kCost,
          [&](int64_t begin, int64_t end) {
            std::array<T*, Update::kNumVars> at;
            for (int64_t b = begin; b < end; b += kBlock) {
              const int64_t n = std::min(kBlock, end - b);
              for (int k = 0; k < Update::kNumVars; ++k) {
                at[k] = base[k] + b;
                if (from[k] != base[k]) {
                  std::memcpy(at[k], from[k] + b, n * sizeof(T));
                }
              }
              update_(scalars.data(), at.data(), g + b, n);
            }
          });
    }
  }

  const training_internal::InputLayout layout_;
  const Update update_;
};

// Registers the dense and sparse kernels of one update.
template <typename Update>
void RegisterUpdateKernels(KernelRegistry* r, const std::string& dense_op,
                           const std::string& sparse_op) {
  RegisterCpuKernel<ApplyUpdateOp<Update, false>>(r, dense_op);
  RegisterCpuKernel<ApplyUpdateOp<Update, true>>(r, sparse_op);
}

// The kernel families of training_kernels_*.cc.
void RegisterFirstOrderTrainingKernels(KernelRegistry* registry);
void RegisterAdaptiveTrainingKernels(KernelRegistry* registry);

}  // namespace distflow

#endif  // DISTFLOW_KERNELS_TRAINING_KERNELS_H_
