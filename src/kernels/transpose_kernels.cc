// Transpose; ExpandDims and Squeeze (views of the input's buffer); Size and
// Rank.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/type_dispatch.h"
#include "graph/ops/array_util.h"
#include "kernels/copy_box.h"
#include "kernels/kernel_families.h"

namespace distflow {
namespace {

// Side of the square tiles of the blocked transpose: a 32x32 tile of floats
// (4 KiB) and the lines it touches stay in L1.
constexpr int64_t kTile = 32;

// A transpose reduced to its essentials: size-1 dimensions dropped and
// dimensions that stay adjacent merged. dims are the input's, perm as in the
// op (output dimension i is input dimension perm[i]).
struct Reduced {
  std::vector<int64_t> dims;
  std::vector<int> perm;
};

Reduced Reduce(const std::vector<int64_t>& dims, const std::vector<int>& perm) {
  const int rank = static_cast<int>(dims.size());
  // Renumber the input dimensions that are not 1.
  std::vector<int> renum(rank, -1);
  std::vector<int64_t> kept;
  for (int i = 0; i < rank; ++i) {
    if (dims[i] != 1) {
      renum[i] = static_cast<int>(kept.size());
      kept.push_back(dims[i]);
    }
  }
  std::vector<int> p;
  for (int i = 0; i < rank; ++i) {
    if (renum[perm[i]] >= 0) p.push_back(renum[perm[i]]);
  }
  // Merge runs p[i], p[i]+1, ... into one input dimension.
  std::vector<std::vector<int>> groups;  // in output order
  for (int v : p) {
    if (!groups.empty() && groups.back().back() + 1 == v) {
      groups.back().push_back(v);
    } else {
      groups.push_back({v});
    }
  }
  // Order groups by their first input dimension to number merged inputs.
  std::vector<int> order(groups.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return groups[a].front() < groups[b].front();
  });
  Reduced r;
  r.dims.resize(groups.size());
  r.perm.resize(groups.size());
  for (size_t k = 0; k < order.size(); ++k) {
    int64_t size = 1;
    for (int v : groups[order[k]]) size *= kept[v];
    r.dims[k] = size;
    r.perm[order[k]] = static_cast<int>(k);
  }
  return r;
}

template <typename T>
void TransposeInto(const T* in, const Reduced& r, T* out, ThreadPool* pool) {
  const int rank = static_cast<int>(r.dims.size());
  std::vector<int64_t> in_stride(rank), out_dims(rank), out_stride(rank);
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; --i) {
    in_stride[i] = s;
    s *= r.dims[i];
  }
  const int64_t total = s;
  s = 1;
  for (int i = rank - 1; i >= 0; --i) {
    out_dims[i] = r.dims[r.perm[i]];
    out_stride[i] = s;
    s *= out_dims[i];
  }
  // Tiles of the plane spanned by output dimension p (the input's last,
  // contiguous in the input) and output dimension q (the output's last,
  // contiguous in the output), for every index of the other dimensions.
  const int q = rank - 1;
  const int p = static_cast<int>(
      std::find(r.perm.begin(), r.perm.end(), rank - 1) - r.perm.begin());
  std::vector<int> others;
  for (int i = 0; i < rank; ++i) {
    if (i != p && i != q) others.push_back(i);
  }
  const int64_t a_size = out_dims[p], b_size = out_dims[q];
  const int64_t b_in_stride = in_stride[r.perm[q]];
  const int64_t a_out_stride = out_stride[p];
  // When the last dimension stays last (p == q), whole rows are contiguous in
  // both and are copied at once.
  const int64_t a_tiles = p == q ? 1 : (a_size + kTile - 1) / kTile;
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t unit = begin; unit < end; ++unit) {
      int64_t rest = unit / a_tiles;
      const int64_t a0 = (unit % a_tiles) * kTile;
      const int64_t a1 = std::min(a_size, a0 + kTile);
      int64_t in_base = 0, out_base = 0;
      for (int k = static_cast<int>(others.size()) - 1; k >= 0; --k) {
        const int d = others[k];
        const int64_t i = rest % out_dims[d];
        rest /= out_dims[d];
        in_base += i * in_stride[r.perm[d]];
        out_base += i * out_stride[d];
      }
      if (p == q) {
        std::copy(in + in_base, in + in_base + b_size, out + out_base);
        continue;
      }
      for (int64_t b0 = 0; b0 < b_size; b0 += kTile) {
        const int64_t b1 = std::min(b_size, b0 + kTile);
        for (int64_t a = a0; a < a1; ++a) {
          T* o = out + out_base + a * a_out_stride;
          const T* src = in + in_base + a;
          for (int64_t b = b0; b < b1; ++b) o[b] = src[b * b_in_stride];
        }
      }
    }
  };
  const int64_t plane = p == q ? b_size : a_size * b_size;
  const int64_t units = total / plane * a_tiles;
  if (total >= kCopyParallelThreshold) {
    pool->ParallelFor(units, kTile * b_size * 2, body);
  } else {
    body(0, units);
  }
}

class TransposeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& perm_t = ctx->input(1);
    const std::vector<int64_t> perm64 = IndexValues(perm_t);
    const int rank = x.dims();
    DF_OP_REQUIRES(
        ctx, perm_t.dims() == 1 && static_cast<int>(perm64.size()) == rank,
        absl::InvalidArgumentError(absl::StrCat(
            "perm ", perm_t.DebugString(), " must be a vector of ", rank,
            " entries for x of shape ", x.shape().DebugString())));
    std::vector<int> perm(rank);
    std::vector<bool> seen(rank, false);
    std::vector<int64_t> out_dims(rank);
    for (int i = 0; i < rank; ++i) {
      DF_OP_REQUIRES(ctx,
                     perm64[i] >= 0 && perm64[i] < rank && !seen[perm64[i]],
                     absl::InvalidArgumentError(absl::StrCat(
                         "perm ", perm_t.DebugString(),
                         " is not a permutation of 0..", rank - 1)));
      seen[perm64[i]] = true;
      perm[i] = static_cast<int>(perm64[i]);
      out_dims[i] = x.dim_size(perm[i]);
    }
    // A permutation of an empty shape can put its sizes in an order whose
    // running product overflows: [0, 2^40, 2^40] -> [2^40, 2^40, 0].
    auto permuted = TensorShape::FromDims(out_dims);
    DF_OP_REQUIRES_OK(ctx, permuted.status());
    const TensorShape& out_shape = *permuted;
    // (Reduce multiplies sizes, which for an empty input may overflow.)
    const Reduced r =
        x.NumElements() == 0 ? Reduced() : Reduce(x.shape().dim_sizes(), perm);
    bool identity = true;
    for (size_t i = 0; i < r.perm.size(); ++i) {
      identity = identity && r.perm[i] == static_cast<int>(i);
    }
    if (identity || x.NumElements() == 0) {
      // The elements keep their order: a view of the input's buffer.
      auto view = x.Reshape(out_shape);
      DF_OP_REQUIRES_OK(ctx, view.status());
      ctx->set_output(0, *view);
      return;
    }
    Tensor* out = ctx->allocate_output(0, x.dtype(), out_shape);
    DF_OP_REQUIRES_OK(ctx, VisitDataType(x.dtype(), [&](auto tag) {
                        using T = typename decltype(tag)::type;
                        TransposeInto<T>(x.data<T>(), r, out->data<T>(),
                                         ctx->intra_op_pool());
                        return absl::OkStatus();
                      }));
  }
};

class InvertPermutationOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const std::vector<int64_t> perm = IndexValues(x);
    const int64_t n = static_cast<int64_t>(perm.size());
    std::vector<int64_t> inv(n, -1);
    for (int64_t i = 0; i < n; ++i) {
      DF_OP_REQUIRES(
          ctx, perm[i] >= 0 && perm[i] < n && inv[perm[i]] < 0,
          absl::InvalidArgumentError(absl::StrCat(
              x.DebugString(), " is not a permutation of 0..", n - 1)));
      inv[perm[i]] = i;
    }
    Tensor* out = ctx->allocate_output(0, x.dtype(), x.shape());
    for (int64_t i = 0; i < n; ++i) {
      if (x.dtype() == DataType::kInt32) {
        out->flat<int32_t>()[i] = static_cast<int32_t>(inv[i]);
      } else {
        out->flat<int64_t>()[i] = inv[i];
      }
    }
  }
  bool IsExpensive() const override { return false; }
};

class ExpandDimsOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const std::vector<int64_t> axis = IndexValues(ctx->input(1));
    DF_OP_REQUIRES(
        ctx, axis.size() == 1,
        absl::InvalidArgumentError(absl::StrCat(
            "axis must hold one value, got ", ctx->input(1).DebugString())));
    auto a = NormalizeAxis(axis[0], x.dims() + 1, "axis of ExpandDims");
    DF_OP_REQUIRES_OK(ctx, a.status());
    std::vector<int64_t> dims = x.shape().dim_sizes();
    dims.insert(dims.begin() + *a, 1);
    auto view = x.Reshape(*TensorShape::FromDims(dims));
    DF_OP_REQUIRES_OK(ctx, view.status());
    ctx->set_output(0, *view);
  }
  bool IsExpensive() const override { return false; }
};

class SqueezeOp : public OpKernel {
 public:
  explicit SqueezeOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    ctx->SetStatus(ctx->GetAttr("squeeze_dims", &squeeze_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    std::vector<bool> drop(x.dims(), squeeze_.empty());
    for (int64_t d : squeeze_) {
      auto a = NormalizeAxis(d, x.dims(), "squeeze dim");
      DF_OP_REQUIRES_OK(ctx, a.status());
      DF_OP_REQUIRES(ctx, x.dim_size(*a) == 1,
                     absl::InvalidArgumentError(absl::StrCat(
                         "cannot squeeze dimension ", d, " of shape ",
                         x.shape().DebugString(), ": its size is not 1")));
      drop[*a] = true;
    }
    std::vector<int64_t> dims;
    for (int i = 0; i < x.dims(); ++i) {
      if (!(drop[i] && x.dim_size(i) == 1)) dims.push_back(x.dim_size(i));
    }
    auto view = x.Reshape(*TensorShape::FromDims(dims));
    DF_OP_REQUIRES_OK(ctx, view.status());
    ctx->set_output(0, *view);
  }
  bool IsExpensive() const override { return false; }

 private:
  std::vector<int64_t> squeeze_;
};

class SizeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const int64_t n = ctx->input(0).NumElements();
    Tensor* out = ctx->allocate_output(0, output_type(0), TensorShape());
    if (output_type(0) == DataType::kInt32) {
      DF_OP_REQUIRES(ctx, n <= INT32_MAX,
                     absl::InvalidArgumentError(
                         absl::StrCat("Size: ", n,
                                      " elements overflow int32; use "
                                      "out_type int64")));
      out->scalar<int32_t>() = static_cast<int32_t>(n);
    } else {
      out->scalar<int64_t>() = n;
    }
  }
  bool IsExpensive() const override { return false; }
};

class RankOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ctx->set_output(0, Tensor::Scalar<int32_t>(ctx->input(0).dims()));
  }
  bool IsExpensive() const override { return false; }
};

}  // namespace

void RegisterTransposeKernels(KernelRegistry* r) {
  RegisterCpuKernel<TransposeOp>(r, "Transpose");
  RegisterCpuKernel<InvertPermutationOp>(r, "InvertPermutation");
  RegisterCpuKernel<ExpandDimsOp>(r, "ExpandDims");
  RegisterCpuKernel<SqueezeOp>(r, "Squeeze");
  RegisterCpuKernel<SizeOp>(r, "Size");
  RegisterCpuKernel<RankOp>(r, "Rank");
}

}  // namespace distflow
