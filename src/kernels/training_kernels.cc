// Shared machinery of the optimizer update kernels; see training_kernels.h.
#include "kernels/training_kernels.h"

#include <algorithm>
#include <functional>

#include "absl/container/flat_hash_map.h"
#include "base/status_macros.h"
#include "kernels/kernel_families.h"

namespace distflow {
namespace training_internal {

InputLayout InputLayout::FromNode(const Node& node) {
  InputLayout layout;
  const std::vector<ArgDef>& inputs = node.op_def().inputs;
  for (int i = 0; i < static_cast<int>(inputs.size()); ++i) {
    const ArgDef& arg = inputs[i];
    layout.names.push_back(arg.name);
    if (arg.type == DataType::kResource) {
      layout.vars.push_back(i);
    } else if (arg.name == "grad" || arg.name == "delta") {
      layout.grad = i;
    } else if (arg.name == "indices") {
      layout.indices = i;
    } else {
      layout.scalars.push_back(i);
    }
  }
  DF_CHECK(!layout.vars.empty() && layout.grad >= 0) << node.op();
  return layout;
}

namespace {

// "variable 'w'" or "slot 'm' ('w/Adam') of variable 'w'".
std::string Describe(const InputLayout& layout, int k,
                     const std::vector<std::string>& names) {
  if (k == 0) return absl::StrCat("variable '", names[0], "'");
  return absl::StrCat("slot '", layout.names[layout.vars[k]], "' ('", names[k],
                      "') of variable '", names[0], "'");
}

}  // namespace

LockedVars::~LockedVars() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  for (auto it = locked_.rbegin(); it != locked_.rend(); ++it) (*it)->Unlock();
}

// The analysis cannot follow a number of locks known only at run time; the
// destructor releases what this takes.
absl::Status LockedVars::Acquire(OpKernelContext* ctx,
                                 const InputLayout& layout, DataType dtype)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  const std::string& device = ctx->device()->name();
  for (int i : layout.vars) {
    DF_ASSIGN_OR_RETURN(
        const ResourceHandle* handle,
        ScalarHandle(ctx->input(i),
                     absl::StrCat("input ", i, " (a variable)")));
    const ResourceHandle& h = *handle;
    names_.push_back(h.name);
    const int k = static_cast<int>(names_.size()) - 1;
    if (h.device != device) {
      return absl::InvalidArgumentError(
          absl::StrCat(Describe(layout, k, names_), " lives on ", h.device,
                       ", not on this device (", device,
                       "); an update must be colocated with its variable"));
    }
    auto var = ctx->resource_manager()->Lookup<Var>(h.container, h.name);
    if (absl::IsNotFound(var.status())) {
      return absl::FailedPreconditionError(absl::StrCat(
          Describe(layout, k, names_),
          " is not initialized: run the global variables initializer "
          "(ops::GlobalVariablesInitializer) before training"));
    }
    if (!var.ok()) return var.status();
    if ((*var)->dtype() != dtype) {
      return absl::InvalidArgumentError(absl::StrCat(
          Describe(layout, k, names_), " is ", DataTypeName((*var)->dtype()),
          " but the update is ", DataTypeName(dtype),
          "; the gradient and hyperparameters must have the variable's type"));
    }
    vars_.push_back(*std::move(var));
  }
  for (const auto& v : vars_) locked_.push_back(v->mu());
  std::sort(locked_.begin(), locked_.end());
  locked_.erase(std::unique(locked_.begin(), locked_.end()), locked_.end());
  for (absl::Mutex* mu : locked_) mu->Lock();

  for (size_t k = 0; k < vars_.size(); ++k) {
    if (!vars_[k]->is_initialized()) {
      return absl::FailedPreconditionError(absl::StrCat(
          Describe(layout, static_cast<int>(k), names_),
          " is not initialized: run the global variables initializer "
          "(ops::GlobalVariablesInitializer) before training"));
    }
    if (k > 0 && vars_[k]->value().shape() != vars_[0]->value().shape()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Describe(layout, static_cast<int>(k), names_),
                       " has shape ", vars_[k]->value().shape().DebugString(),
                       " but the variable has "
                       "shape ",
                       vars_[0]->value().shape().DebugString()));
    }
  }
  return absl::OkStatus();
}

const Tensor& LockedVars::value(int k) const ABSL_NO_THREAD_SAFETY_ANALYSIS {
  return vars_[k]->value();
}

Tensor* LockedVars::mutable_value(int k) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  return vars_[k]->mutable_value();
}

Tensor* LockedVars::value_for_overwrite(int k, Tensor* previous)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  return vars_[k]->value_for_overwrite(previous);
}

absl::Status CheckSparseShapes(const Tensor& var, const Tensor& grad,
                               const Tensor& indices,
                               const std::string& var_name) {
  if (var.dims() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("a sparse update needs rows, but variable '", var_name,
                     "' is a scalar"));
  }
  if (indices.dims() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "indices of the sparse update of variable '", var_name,
        "' must be a vector, got shape ", indices.shape().DebugString()));
  }
  bool fits =
      grad.dims() == var.dims() && grad.dim_size(0) == indices.dim_size(0);
  for (int d = 1; fits && d < var.dims(); ++d) {
    fits = grad.dim_size(d) == var.dim_size(d);
  }
  if (!fits) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sparse gradient of shape ", grad.shape().DebugString(), " with ",
        indices.dim_size(0), " indices does not fit variable '", var_name,
        "' of shape ", var.shape().DebugString(),
        " (want one gradient row of the variable's row shape per index)"));
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status GroupRows(const Tensor& indices, const T* grad, int64_t row_size,
                       int64_t num_rows, const std::string& var_name,
                       UniqueRows<T>* out) {
  const int64_t n = indices.NumElements();
  std::vector<int64_t> idx(n);
  if (indices.dtype() == DataType::kInt32) {
    auto in = indices.flat<int32_t>();
    std::copy(in.begin(), in.end(), idx.begin());
  } else {
    auto in = indices.flat<int64_t>();
    std::copy(in.begin(), in.end(), idx.begin());
  }
  // Where each listed row's gradient goes among the unique rows.
  std::vector<int64_t> slot(n);
  absl::flat_hash_map<int64_t, int64_t> first;
  first.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    if (idx[i] < 0 || idx[i] >= num_rows) {
      return absl::InvalidArgumentError(
          absl::StrCat("index ", idx[i], " (at position ", i,
                       " of the indices) is out of range for variable '",
                       var_name, "' with ", num_rows, " rows"));
    }
    auto [it, inserted] =
        first.try_emplace(idx[i], static_cast<int64_t>(out->rows.size()));
    if (inserted) out->rows.push_back(idx[i]);
    slot[i] = it->second;
  }
  out->grad = grad;
  if (static_cast<int64_t>(out->rows.size()) == n) return absl::OkStatus();
  out->summed.assign(out->rows.size() * row_size, T(0));
  for (int64_t i = 0; i < n; ++i) {
    FlatMap<T>(out->summed.data() + slot[i] * row_size, row_size) +=
        ConstFlatMap<T>(grad + i * row_size, row_size);
  }
  return absl::OkStatus();
}

template absl::Status GroupRows<float>(const Tensor&, const float*, int64_t,
                                       int64_t, const std::string&,
                                       UniqueRows<float>*);
template absl::Status GroupRows<double>(const Tensor&, const double*, int64_t,
                                        int64_t, const std::string&,
                                        UniqueRows<double>*);

void ParallelRange(OpKernelContext* ctx, int64_t n, int64_t cost,
                   const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  ThreadPool* pool = ctx->intra_op_pool();
  if (pool == nullptr) {
    fn(0, n);
    return;
  }
  pool->ParallelFor(n, std::max<int64_t>(cost, 1), fn);
}

}  // namespace training_internal

void RegisterTrainingKernels(KernelRegistry* registry) {
  RegisterFirstOrderTrainingKernels(registry);
  RegisterAdaptiveTrainingKernels(registry);
}

}  // namespace distflow
