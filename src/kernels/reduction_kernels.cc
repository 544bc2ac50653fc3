// Reductions (Sum, Mean, Max, Min, Prod), ArgMax/ArgMin and BiasAddGrad.
//
// A reduction first merges adjacent dimensions that are all reduced or all
// kept, dropping size-1 ones. Then it removes reduced groups one at a time,
// innermost first, each as a reduction of [outer, reduced, inner] over the
// middle: a contiguous (vectorized) reduction when inner is 1, else a
// vectorized accumulation of rows. Typical cases (all axes, trailing axes,
// leading axes) take a single pass.
#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/ops/reduction_ops.h"
#include "kernels/cwise_util.h"
#include "kernels/kernel_families.h"

namespace distflow {
namespace {

template <typename T>
using ConstArray = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

struct SumReducer {
  template <typename T>
  static T Identity() {
    return T(0);
  }
  template <typename T>
  static T Combine(T a, T b) {
    return static_cast<T>(a + b);
  }
  template <typename T>
  static T Contiguous(const T* p, int64_t n) {
    return n == 0 ? T(0) : ConstArray<T>(p, n).sum();
  }
};
struct ProdReducer {
  template <typename T>
  static T Identity() {
    return T(1);
  }
  template <typename T>
  static T Combine(T a, T b) {
    return static_cast<T>(a * b);
  }
  template <typename T>
  static T Contiguous(const T* p, int64_t n) {
    return n == 0 ? T(1) : ConstArray<T>(p, n).prod();
  }
};
struct MaxReducer {
  template <typename T>
  static T Identity() {
    return std::numeric_limits<T>::has_infinity
               ? -std::numeric_limits<T>::infinity()
               : std::numeric_limits<T>::lowest();
  }
  template <typename T>
  static T Combine(T a, T b) {
    return a > b ? a : b;
  }
  template <typename T>
  static T Contiguous(const T* p, int64_t n) {
    return n == 0 ? Identity<T>() : ConstArray<T>(p, n).maxCoeff();
  }
};
struct MinReducer {
  template <typename T>
  static T Identity() {
    return std::numeric_limits<T>::has_infinity
               ? std::numeric_limits<T>::infinity()
               : std::numeric_limits<T>::max();
  }
  template <typename T>
  static T Combine(T a, T b) {
    return a < b ? a : b;
  }
  template <typename T>
  static T Contiguous(const T* p, int64_t n) {
    return n == 0 ? Identity<T>() : ConstArray<T>(p, n).minCoeff();
  }
};

// Columns one task of a row-accumulating reduction handles (fits in L1).
constexpr int64_t kColumnBlock = 1024;

// out[o, i] = reduce over r of in[o, r, i], for a dense [outer, n, inner] in.
template <typename R, typename T>
void Reduce3D(const T* in, int64_t outer, int64_t n, int64_t inner, T* out,
              ThreadPool* pool) {
  if (outer == 0 || inner == 0) return;
  if (inner == 1) {
    if (outer == 1 && n >= 4 * kCwiseParallelThreshold && pool != nullptr &&
        pool->NumThreads() > 1) {
      // One long reduction: partial results per block, combined here.
      const int64_t blocks = 4 * pool->NumThreads();
      const int64_t per = (n + blocks - 1) / blocks;
      std::vector<T> partial(blocks, R::template Identity<T>());
      pool->ParallelFor(blocks, per, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          const int64_t begin = std::min(n, b * per);
          const int64_t end = std::min(n, begin + per);
          partial[b] = R::Contiguous(in + begin, end - begin);
        }
      });
      T acc = R::template Identity<T>();
      for (T p : partial) acc = R::Combine(acc, p);
      *out = acc;
      return;
    }
    ParallelRange(pool, outer, std::max<int64_t>(n, 1),
                  [&](int64_t o0, int64_t o1) {
                    for (int64_t o = o0; o < o1; ++o) {
                      out[o] = R::Contiguous(in + o * n, n);
                    }
                  });
    return;
  }
  const int64_t blocks = (inner + kColumnBlock - 1) / kColumnBlock;
  ParallelRange(pool, outer * blocks,
                std::max<int64_t>(n, 1) * std::min(inner, kColumnBlock),
                [&](int64_t t0, int64_t t1) {
                  for (int64_t t = t0; t < t1; ++t) {
                    const int64_t o = t / blocks;
                    const int64_t c0 = (t % blocks) * kColumnBlock;
                    const int64_t c1 = std::min(inner, c0 + kColumnBlock);
                    T* __restrict acc = out + o * inner;
                    for (int64_t c = c0; c < c1; ++c)
                      acc[c] = R::template Identity<T>();
                    for (int64_t r = 0; r < n; ++r) {
                      const T* __restrict row = in + (o * n + r) * inner;
                      for (int64_t c = c0; c < c1; ++c)
                        acc[c] = R::Combine(acc[c], row[c]);
                    }
                  }
                });
}

// Reduces `in` over the dimensions marked in `reduce`, writing the result's
// elements (in row-major order of the kept dimensions) to `out`.
template <typename R, typename T>
void ReduceAxes(const Tensor& in, const std::vector<bool>& reduce, T* out,
                ThreadPool* pool) {
  struct Group {
    int64_t size;
    bool reduced;
  };
  std::vector<Group> groups;
  for (int d = 0; d < in.dims(); ++d) {
    const int64_t size = in.dim_size(d);
    if (size == 1) continue;
    if (!groups.empty() && groups.back().reduced == reduce[d]) {
      groups.back().size *= size;
    } else {
      groups.push_back({size, reduce[d]});
    }
  }
  const T* src = in.data<T>();
  std::vector<T> buffers[2];
  int which = 0;
  while (true) {
    int last = -1;
    for (int g = 0; g < static_cast<int>(groups.size()); ++g) {
      if (groups[g].reduced) last = g;
    }
    if (last < 0) {
      // Nothing (more) to reduce: copy what is left.
      int64_t count = 1;
      for (const Group& g : groups) count *= g.size;
      std::copy(src, src + count, out);
      return;
    }
    bool final_pass = true;
    for (int g = 0; g < last; ++g) final_pass &= !groups[g].reduced;
    int64_t outer = 1, inner = 1;
    for (int g = 0; g < last; ++g) outer *= groups[g].size;
    for (int g = last + 1; g < static_cast<int>(groups.size()); ++g)
      inner *= groups[g].size;
    T* dst = out;
    if (!final_pass) {
      buffers[which].resize(outer * inner);
      dst = buffers[which].data();
    }
    Reduce3D<R, T>(src, outer, groups[last].size, inner, dst, pool);
    if (final_pass) return;
    src = dst;
    which ^= 1;
    // Remove the group; its kept neighbours become one.
    groups.erase(groups.begin() + last);
    if (last > 0 && last < static_cast<int>(groups.size())) {
      groups[last - 1].size *= groups[last].size;
      groups.erase(groups.begin() + last);
    }
  }
}

template <typename R, bool kMean>
class ReductionOp : public OpKernel {
 public:
  explicit ReductionOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    ctx->SetStatus(ctx->GetAttr("keep_dims", &keep_dims_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    auto reduce = ReductionAxes(ctx->input(1), in.dims());
    DF_OP_REQUIRES_OK(
        ctx, AddErrorContext(reduce.status(),
                             absl::StrCat("reducing input ", in.TypeString())));
    std::vector<int64_t> dims;
    // Elements reduced into each output element. The sizes of an input of no
    // elements can multiply past int64, so ReduceAxes never sees one (below).
    const bool empty = in.NumElements() == 0;
    int64_t count = empty ? 0 : 1;
    for (int d = 0; d < in.dims(); ++d) {
      if ((*reduce)[d]) {
        if (!empty) count *= in.dim_size(d);
        if (keep_dims_) dims.push_back(1);
      } else {
        dims.push_back(in.dim_size(d));
      }
    }
    auto shape = TensorShape::FromDims(dims);
    DF_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = ctx->allocate_output(0, in.dtype(), *shape);
    DF_OP_REQUIRES_OK(
        ctx, VisitNumericType(in.dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          T* o = out->data<T>();
          if (empty) {
            // Each output element reduces nothing.
            Reduce3D<R, T>(nullptr, out->NumElements(), 0, 1, o,
                           ctx->intra_op_pool());
          } else {
            ReduceAxes<R, T>(in, *reduce, o, ctx->intra_op_pool());
          }
          if constexpr (kMean) {
            // Integer means of nothing stay 0 rather than trap.
            if (std::is_floating_point_v<T> || count != 0) {
              const int64_t n = out->NumElements();
              for (int64_t i = 0; i < n; ++i) {
                o[i] = static_cast<T>(o[i] / static_cast<T>(count));
              }
            }
          }
          return absl::OkStatus();
        }));
  }

 private:
  bool keep_dims_ = false;
};

template <bool kMax>
class ArgReductionOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    auto axis = SingleAxis(ctx->input(1), in.dims());
    DF_OP_REQUIRES_OK(ctx,
                      AddErrorContext(axis.status(),
                                      absl::StrCat("input ", in.TypeString())));
    const int64_t n = in.dim_size(*axis);
    DF_OP_REQUIRES(ctx, n > 0,
                   absl::InvalidArgumentError(absl::StrCat(
                       "cannot take ", type(), " along axis ", *axis,
                       " of size 0 (input ", in.TypeString(), ")")));
    std::vector<int64_t> dims;
    for (int d = 0; d < in.dims(); ++d) {
      if (d != *axis) dims.push_back(in.dim_size(d));
    }
    auto shape = TensorShape::FromDims(dims);
    DF_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = ctx->allocate_output(0, DataType::kInt64, *shape);
    // (n > 0, so an empty input has an empty output; the sizes of an empty
    // input can multiply past int64.)
    if (in.NumElements() == 0) return;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < in.dims(); ++d) {
      if (d != *axis) (d < *axis ? outer : inner) *= in.dim_size(d);
    }
    int64_t* o = out->data<int64_t>();
    DF_OP_REQUIRES_OK(
        ctx, VisitNumericType(in.dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* x = in.data<T>();
          auto better = [](T a, T b) { return kMax ? a > b : a < b; };
          ParallelRange(ctx->intra_op_pool(), outer * inner, n,
                        [&](int64_t b, int64_t e) {
                          for (int64_t k = b; k < e; ++k) {
                            const T* p =
                                x + (k / inner) * n * inner + k % inner;
                            int64_t best = 0;
                            for (int64_t r = 1; r < n; ++r) {
                              if (better(p[r * inner], p[best * inner]))
                                best = r;
                            }
                            o[k] = best;
                          }
                        });
          return absl::OkStatus();
        }));
  }
};

class BiasAddGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    DF_OP_REQUIRES(
        ctx, g.dims() >= 1,
        absl::InvalidArgumentError(absl::StrCat(
            "out_backprop must have rank >= 1, got ", g.TypeString())));
    const int64_t c = g.dim_size(g.dims() - 1);
    Tensor* out = ctx->allocate_output(0, g.dtype(), TensorShape({c}));
    DF_OP_REQUIRES_OK(ctx, VisitNumericType(g.dtype(), [&](auto tag) {
                        using T = typename decltype(tag)::type;
                        const int64_t rows = c == 0 ? 0 : g.NumElements() / c;
                        if (rows == 0) {
                          std::fill_n(out->data<T>(), c, T(0));
                        } else {
                          Reduce3D<SumReducer, T>(g.data<T>(), 1, rows, c,
                                                  out->data<T>(),
                                                  ctx->intra_op_pool());
                        }
                        return absl::OkStatus();
                      }));
  }
};

}  // namespace

void RegisterReductionKernels(KernelRegistry* r) {
  RegisterCpuKernel<ReductionOp<SumReducer, false>>(r, "Sum");
  RegisterCpuKernel<ReductionOp<SumReducer, true>>(r, "Mean");
  RegisterCpuKernel<ReductionOp<MaxReducer, false>>(r, "Max");
  RegisterCpuKernel<ReductionOp<MinReducer, false>>(r, "Min");
  RegisterCpuKernel<ReductionOp<ProdReducer, false>>(r, "Prod");
  RegisterCpuKernel<ArgReductionOp<true>>(r, "ArgMax");
  RegisterCpuKernel<ArgReductionOp<false>>(r, "ArgMin");
  RegisterCpuKernel<BiasAddGradOp>(r, "BiasAddGrad");
}

}  // namespace distflow
