// Const, Placeholder, Identity, Shape, Reshape, Fill.
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/type_dispatch.h"
#include "kernels/kernel_families.h"

namespace distflow {
namespace {

class ConstOp : public OpKernel {
 public:
  explicit ConstOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    ctx->SetStatus(ctx->GetAttr("value", &value_));
  }
  // Every step shares the one decoded tensor; consumers never write to their
  // inputs.
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, value_); }
  bool IsExpensive() const override { return false; }

 private:
  Tensor value_;
};

class PlaceholderOp : public OpKernel {
 public:
  explicit PlaceholderOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    DataType dtype;
    PartialTensorShape shape;
    ctx->SetStatus(ctx->GetAttr("dtype", &dtype));
    ctx->SetStatus(ctx->GetAttr("shape", &shape));
    expected_ = absl::StrCat(DataTypeName(dtype), shape.DebugString());
  }
  void Compute(OpKernelContext* ctx) override {
    ctx->SetStatus(absl::InvalidArgumentError(
        absl::StrCat("placeholder '", name(), "' must be fed a ", expected_,
                     " value (pass it in the feeds of Run)")));
  }

 private:
  std::string expected_;
};

class IdentityOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ctx->set_output(0, ctx->input(0));
  }
  bool IsExpensive() const override { return false; }
};

class ShapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const TensorShape& shape = ctx->input(0).shape();
    Tensor* out =
        ctx->allocate_output(0, output_type(0), TensorShape({shape.dims()}));
    for (int i = 0; i < shape.dims(); ++i) {
      if (output_type(0) == DataType::kInt32) {
        out->flat<int32_t>()[i] = static_cast<int32_t>(shape.dim_size(i));
      } else {
        out->flat<int64_t>()[i] = shape.dim_size(i);
      }
    }
  }
  bool IsExpensive() const override { return false; }
};

// Reads a shape vector (int32 or int64) from a tensor.
std::vector<int64_t> ShapeVector(const Tensor& t) {
  std::vector<int64_t> dims;
  if (t.dtype() == DataType::kInt32) {
    for (int32_t d : t.flat<int32_t>()) dims.push_back(d);
  } else {
    for (int64_t d : t.flat<int64_t>()) dims.push_back(d);
  }
  return dims;
}

class ReshapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& sizes = ctx->input(1);
    DF_OP_REQUIRES(ctx, sizes.dims() == 1,
                   absl::InvalidArgumentError(absl::StrCat(
                       "shape must be a vector, got ", sizes.TypeString())));
    std::vector<int64_t> dims = ShapeVector(sizes);
    int unknown = -1;
    int64_t product = 1;
    for (int i = 0; i < static_cast<int>(dims.size()); ++i) {
      if (dims[i] == -1 && unknown < 0) {
        unknown = i;
      } else {
        DF_OP_REQUIRES(ctx, dims[i] >= 0,
                       absl::InvalidArgumentError(absl::StrCat(
                           "shape ", sizes.DebugString(), " has a bad size ",
                           dims[i], " (sizes are >= 0, with at most one -1)")));
        DF_OP_REQUIRES(
            ctx,
            dims[i] == 0 ||
                product <= std::numeric_limits<int64_t>::max() / dims[i],
            absl::InvalidArgumentError(
                absl::StrCat("shape ", sizes.DebugString(),
                             " has more elements than fit in int64")));
        product *= dims[i];
      }
    }
    if (unknown >= 0) {
      DF_OP_REQUIRES(ctx, product > 0 && input.NumElements() % product == 0,
                     absl::InvalidArgumentError(absl::StrCat(
                         "cannot reshape ", input.TypeString(), " (",
                         input.NumElements(), " elements) to ",
                         PartialTensorShape::FromDims(dims)->DebugString())));
      dims[unknown] = input.NumElements() / product;
    }
    auto shape = TensorShape::FromDims(dims);
    DF_OP_REQUIRES_OK(ctx, shape.status());
    auto reshaped = input.Reshape(*shape);
    DF_OP_REQUIRES_OK(ctx, reshaped.status());
    ctx->set_output(0, *reshaped);
  }
  bool IsExpensive() const override { return false; }
};

class FillOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& dims = ctx->input(0);
    const Tensor& value = ctx->input(1);
    DF_OP_REQUIRES(ctx, dims.dims() == 1 && value.dims() == 0,
                   absl::InvalidArgumentError(absl::StrCat(
                       "dims must be a vector and value a scalar, got ",
                       dims.TypeString(), " and ", value.TypeString())));
    auto shape = TensorShape::FromDims(ShapeVector(dims));
    DF_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = ctx->allocate_output(0, value.dtype(), *shape);
    DF_OP_REQUIRES_OK(ctx, VisitDataType(value.dtype(), [&](auto tag) {
                        using T = typename decltype(tag)::type;
                        const T v = value.scalar<T>();
                        for (T& x : out->flat<T>()) x = v;
                        return absl::OkStatus();
                      }));
  }
};

// ZerosLike and OnesLike: x's shape and type filled with kValue.
template <int kValue>
class FillLikeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = ctx->allocate_output(0, x.dtype(), x.shape());
    DF_OP_REQUIRES_OK(ctx, VisitNumericType(x.dtype(), [&](auto tag) {
                        using T = typename decltype(tag)::type;
                        for (T& v : out->flat<T>()) v = static_cast<T>(kValue);
                        return absl::OkStatus();
                      }));
  }
};

}  // namespace

void RegisterArrayKernels(KernelRegistry* r) {
  RegisterCpuKernel<ConstOp>(r, "Const");
  RegisterCpuKernel<PlaceholderOp>(r, "Placeholder");
  RegisterCpuKernel<IdentityOp>(r, "Identity");
  RegisterCpuKernel<ShapeOp>(r, "Shape");
  RegisterCpuKernel<ReshapeOp>(r, "Reshape");
  RegisterCpuKernel<FillOp>(r, "Fill");
  RegisterCpuKernel<FillLikeOp<0>>(r, "ZerosLike");
  RegisterCpuKernel<FillLikeOp<1>>(r, "OnesLike");
}

}  // namespace distflow
