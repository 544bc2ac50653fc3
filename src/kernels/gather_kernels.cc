// Gather, UnsortedSegmentSum, OneHot and Range.
#include <algorithm>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/type_dispatch.h"
#include "graph/ops/array_util.h"
#include "kernels/copy_box.h"
#include "kernels/kernel_families.h"

namespace distflow {
namespace {

// "[i,j]": the position of flat element `flat` in a tensor of `shape`.
std::string PositionString(const TensorShape& shape, int64_t flat) {
  std::vector<int64_t> pos(shape.dims());
  for (int d = shape.dims() - 1; d >= 0; --d) {
    pos[d] = shape.dim_size(d) == 0 ? 0 : flat % shape.dim_size(d);
    flat = shape.dim_size(d) == 0 ? 0 : flat / shape.dim_size(d);
  }
  return absl::StrCat("[", absl::StrJoin(pos, ","), "]");
}

class GatherOp : public OpKernel {
 public:
  explicit GatherOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    ctx->SetStatus(ctx->GetAttr("axis", &axis_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& params = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    DF_OP_REQUIRES(
        ctx, params.dims() >= 1,
        absl::InvalidArgumentError("params must have rank >= 1, got a scalar"));
    auto a = NormalizeAxis(axis_, params.dims(), "axis of Gather");
    DF_OP_REQUIRES_OK(ctx, a.status());
    const std::vector<int64_t> idx = IndexValues(indices);
    const int64_t n = params.dim_size(*a);
    for (size_t i = 0; i < idx.size(); ++i) {
      DF_OP_REQUIRES(ctx, idx[i] >= 0 && idx[i] < n,
                     absl::InvalidArgumentError(absl::StrCat(
                         "indices", PositionString(indices.shape(), i), " = ",
                         idx[i], " is not in [0, ", n, "): params has shape ",
                         params.shape().DebugString(), " and axis ", *a)));
    }
    const std::vector<int64_t>& pd = params.shape().dim_sizes();
    std::vector<int64_t> dims(pd.begin(), pd.begin() + *a);
    const std::vector<int64_t>& id = indices.shape().dim_sizes();
    dims.insert(dims.end(), id.begin(), id.end());
    dims.insert(dims.end(), pd.begin() + *a + 1, pd.end());
    auto shape = TensorShape::FromDims(dims);
    DF_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = ctx->allocate_output(0, params.dtype(), *shape);
    if (out->NumElements() == 0) return;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < *a; ++d) outer *= pd[d];
    for (int d = *a + 1; d < params.dims(); ++d) inner *= pd[d];
    const int64_t m = static_cast<int64_t>(idx.size());
    DF_OP_REQUIRES_OK(ctx, VisitDataType(params.dtype(), [&](auto tag) {
                        using T = typename decltype(tag)::type;
                        const T* src = params.data<T>();
                        T* dst = out->data<T>();
                        // Row r of the output is row idx[r % m] of outer slice
                        // r / m.
                        auto body = [&](int64_t begin, int64_t end) {
                          for (int64_t r = begin; r < end; ++r) {
                            const int64_t o = r / m, j = r % m;
                            const T* from = src + (o * n + idx[j]) * inner;
                            std::copy(from, from + inner, dst + r * inner);
                          }
                        };
                        if (out->NumElements() >= kCopyParallelThreshold) {
                          ctx->intra_op_pool()->ParallelFor(outer * m,
                                                            inner + 8, body);
                        } else {
                          body(0, outer * m);
                        }
                        return absl::OkStatus();
                      }));
  }

 private:
  int64_t axis_ = 0;
};

class UnsortedSegmentSumOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    const Tensor& ids_t = ctx->input(1);
    DF_OP_REQUIRES(ctx, ctx->input(2).NumElements() == 1,
                   absl::InvalidArgumentError(
                       absl::StrCat("num_segments must be a scalar, got ",
                                    ctx->input(2).TypeString())));
    const int64_t num = IndexValues(ctx->input(2))[0];
    DF_OP_REQUIRES(ctx, num >= 0,
                   absl::InvalidArgumentError(absl::StrCat(
                       "num_segments is ", num, " but must be >= 0")));
    bool prefix = ids_t.dims() <= data.dims();
    for (int d = 0; prefix && d < ids_t.dims(); ++d) {
      prefix = ids_t.dim_size(d) == data.dim_size(d);
    }
    DF_OP_REQUIRES(ctx, prefix,
                   absl::InvalidArgumentError(absl::StrCat(
                       "segment_ids of shape ", ids_t.shape().DebugString(),
                       " must be a prefix of the shape of data, ",
                       data.shape().DebugString())));
    const std::vector<int64_t> ids = IndexValues(ids_t);
    for (size_t i = 0; i < ids.size(); ++i) {
      DF_OP_REQUIRES(ctx, ids[i] < num,
                     absl::InvalidArgumentError(absl::StrCat(
                         "segment_ids", PositionString(ids_t.shape(), i), " = ",
                         ids[i], " is not below num_segments ", num)));
    }
    std::vector<int64_t> dims = {num};
    const std::vector<int64_t>& dd = data.shape().dim_sizes();
    dims.insert(dims.end(), dd.begin() + ids_t.dims(), dd.end());
    auto shape = TensorShape::FromDims(dims);
    DF_OP_REQUIRES_OK(ctx, shape.status());
    Tensor out(data.dtype(), *shape);  // zeros
    int64_t inner = 1;
    for (size_t d = ids_t.dims(); d < dd.size(); ++d) inner *= dd[d];
    DF_OP_REQUIRES_OK(
        ctx, VisitNumericType(data.dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* src = data.data<T>();
          T* dst = out.data<T>();
          // Threads split the columns, never the rows, so that no two add into
          // the same element and sums come out in a fixed order.
          auto body = [&](int64_t c0, int64_t c1) {
            for (size_t i = 0; i < ids.size(); ++i) {
              if (ids[i] < 0) continue;  // dropped, as documented
              const T* from = src + i * inner;
              T* to = dst + ids[i] * inner;
              for (int64_t c = c0; c < c1; ++c) to[c] += from[c];
            }
          };
          if (data.NumElements() >= kCopyParallelThreshold && inner >= 256) {
            ctx->intra_op_pool()->ParallelFor(
                inner, static_cast<int64_t>(ids.size()) * 2, body);
          } else {
            body(0, inner);
          }
          return absl::OkStatus();
        }));
    ctx->set_output(0, out);
  }
};

class OneHotOp : public OpKernel {
 public:
  explicit OneHotOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    ctx->SetStatus(ctx->GetAttr("axis", &axis_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& indices = ctx->input(0);
    const Tensor& on = ctx->input(2);
    const Tensor& off = ctx->input(3);
    DF_OP_REQUIRES(ctx,
                   ctx->input(1).NumElements() == 1 && on.NumElements() == 1 &&
                       off.NumElements() == 1,
                   absl::InvalidArgumentError(absl::StrCat(
                       "depth, on_value and off_value must be scalars, got ",
                       ctx->input(1).TypeString(), ", ", on.TypeString(),
                       " and ", off.TypeString())));
    const int64_t depth = ctx->input(1).flat<int32_t>()[0];
    DF_OP_REQUIRES(ctx, depth >= 0,
                   absl::InvalidArgumentError(
                       absl::StrCat("depth is ", depth, " but must be >= 0")));
    const int rank = indices.dims() + 1;
    DF_OP_REQUIRES(
        ctx, axis_ >= -1 && axis_ < rank,
        absl::InvalidArgumentError(absl::StrCat(
            "axis is ", axis_, " but must be in [-1, ", rank,
            ") for indices of shape ", indices.shape().DebugString())));
    const int a = axis_ == -1 ? rank - 1 : static_cast<int>(axis_);
    std::vector<int64_t> dims = indices.shape().dim_sizes();
    dims.insert(dims.begin() + a, depth);
    auto shape = TensorShape::FromDims(dims);
    DF_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = ctx->allocate_output(0, on.dtype(), *shape);
    std::vector<int64_t> idx;
    if (indices.dtype() == DataType::kUInt8) {
      for (uint8_t v : indices.flat<uint8_t>()) idx.push_back(v);
    } else {
      idx = IndexValues(indices);
    }
    int64_t suffix = 1;
    for (int d = a; d < indices.dims(); ++d) suffix *= indices.dim_size(d);
    DF_OP_REQUIRES_OK(ctx, VisitDataType(on.dtype(), [&](auto tag) {
                        using T = typename decltype(tag)::type;
                        T* dst = out->data<T>();
                        std::fill(dst, dst + out->NumElements(),
                                  off.flat<T>()[0]);
                        const T on_value = on.flat<T>()[0];
                        for (size_t i = 0; i < idx.size(); ++i) {
                          if (idx[i] < 0 || idx[i] >= depth)
                            continue;  // a row of off_value
                          const int64_t p = static_cast<int64_t>(i) / suffix;
                          const int64_t s = static_cast<int64_t>(i) % suffix;
                          dst[(p * depth + idx[i]) * suffix + s] = on_value;
                        }
                        return absl::OkStatus();
                      }));
  }

 private:
  int64_t axis_ = -1;
};

class RangeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < 3; ++i) {
      DF_OP_REQUIRES(ctx, ctx->input(i).NumElements() == 1,
                     absl::InvalidArgumentError(absl::StrCat(
                         "start, limit and delta must be scalars, got ",
                         ctx->input(i).TypeString(), " for input ", i)));
    }
    DF_OP_REQUIRES_OK(
        ctx, VisitNumericType(ctx->input(0).dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T start = ctx->input(0).flat<T>()[0];
          const T limit = ctx->input(1).flat<T>()[0];
          const T delta = ctx->input(2).flat<T>()[0];
          auto n = RangeLength(static_cast<double>(start),
                               static_cast<double>(limit),
                               static_cast<double>(delta));
          if (!n.ok()) return n.status();
          int64_t count = *n;
          if constexpr (std::is_integral_v<T>) {
            // Exact for integers, where a double may round.
            const int64_t span = std::llabs(static_cast<int64_t>(limit) -
                                            static_cast<int64_t>(start));
            const int64_t step = std::llabs(static_cast<int64_t>(delta));
            count = (span + step - 1) / step;
          }
          Tensor* out = ctx->allocate_output(0, DataTypeOf<T>::value,
                                             TensorShape({count}));
          T* dst = out->data<T>();
          for (int64_t i = 0; i < count; ++i) {
            dst[i] = static_cast<T>(start + static_cast<T>(i) * delta);
          }
          return absl::OkStatus();
        }));
  }
};

}  // namespace

void RegisterGatherKernels(KernelRegistry* r) {
  RegisterCpuKernel<GatherOp>(r, "Gather");
  RegisterCpuKernel<UnsortedSegmentSumOp>(r, "UnsortedSegmentSum");
  RegisterCpuKernel<OneHotOp>(r, "OneHot");
  RegisterCpuKernel<RangeOp>(r, "Range");
}

}  // namespace distflow
