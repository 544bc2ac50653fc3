// Random numbers (RandomUniform, RandomStandardNormal, TruncatedNormal), the
// fused dropout mask, Dropout and the weight initializers built from them.
#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/node_builder.h"
#include "graph/ops/op_families.h"
#include "graph/shape_inference.h"

namespace distflow {
namespace {

// The stddev of the standard normal truncated to [-2, 2]: dividing by it makes
// truncated samples have the intended stddev.
constexpr double kTruncatedStddev = 0.87962566103423978;

absl::Status ShapeFromInput0(InferenceContext* c) {
  DF_ASSIGN_OR_RETURN(PartialTensorShape shape, c->InputAsShape(0));
  c->set_output(0, shape);
  return absl::OkStatus();
}

absl::Status DropoutMaskShape(InferenceContext* c) {
  if (c->input(1).dims() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rate must be a scalar, got shape ", c->input(1).DebugString()));
  }
  return ShapeFromInput0(c);
}

OpDefBuilder RandomOp(const char* name) {
  OpDefBuilder b(name);
  b.Input("shape", "T")
      .Output("output", "dtype")
      .TypeAttr("T", {DataType::kInt32, DataType::kInt64})
      .TypeAttr("dtype", kFloatingTypes)
      .Attr("seed", MakeAttr(int64_t{0}))
      .Attr("seed2", MakeAttr(int64_t{0}))
      .Stateful()
      .SetShapeFn(ShapeFromInput0);
  return b;
}

Output RandomNode(const Scope& scope, const char* op, const Input& shape,
                  DataType dtype, const ops::RandomSeed& seed) {
  return NodeBuilder(scope, op, op)
      .Input(AsOutput(scope, shape))
      .Attr("dtype", dtype)
      .Attr("seed", seed.seed)
      .Attr("seed2", seed.seed2)
      .Finalize()
      .output(0);
}

Output ShapeConst(const Scope& scope, const TensorShape& shape) {
  return AsOutput(scope, Tensor::Vector<int64_t>(shape.dim_sizes()));
}

// scale * r + shift, in r's type.
Output Affine(const Scope& scope, const Output& r, double scale, double shift) {
  Output scaled = ops::Mul(scope, r, scale);
  return shift == 0 ? scaled : ops::Add(scope, scaled, shift);
}

Output Uniform(const Scope& scope, const TensorShape& shape, double minval,
               double maxval, int64_t seed, DataType dtype) {
  Output u = RandomNode(scope, "RandomUniform", ShapeConst(scope, shape), dtype,
                        {seed, 0});
  return Affine(scope, u, maxval - minval, minval);
}

Output Truncated(const Scope& scope, const TensorShape& shape, double stddev,
                 double mean, int64_t seed, DataType dtype) {
  Output t = RandomNode(scope, "TruncatedNormal", ShapeConst(scope, shape),
                        dtype, {seed, 0});
  return Affine(scope, t, stddev, mean);
}

}  // namespace

void RegisterRandomOps(OpRegistry* r) {
  AddOp(r, RandomOp("RandomUniform")
               .Summary("Uniform samples in [0, 1) of the given shape."));
  AddOp(r, RandomOp("RandomStandardNormal")
               .Summary("Samples of the standard normal distribution."));
  AddOp(r, RandomOp("TruncatedNormal")
               .Summary("Standard normal samples, redrawn beyond 2 stddev."));
  AddOp(r, OpDefBuilder("DropoutMask")
               .Input("shape", "T")
               .Input("rate", "dtype")
               .Output("mask", "dtype")
               .TypeAttr("T", {DataType::kInt32, DataType::kInt64})
               .TypeAttr("dtype", kFloatingTypes)
               .Attr("seed", MakeAttr(int64_t{0}))
               .Attr("seed2", MakeAttr(int64_t{0}))
               .Stateful()
               .Summary("mask[i] = 1 / (1 - rate) with probability 1 - rate, "
                        "else 0.")
               .SetShapeFn(DropoutMaskShape));
}

namespace ops {

Output RandomUniform(const Scope& scope, const Input& shape, DataType dtype,
                     const RandomSeed& seed) {
  return RandomNode(scope, "RandomUniform", shape, dtype, seed);
}

Output RandomStandardNormal(const Scope& scope, const Input& shape,
                            DataType dtype, const RandomSeed& seed) {
  return RandomNode(scope, "RandomStandardNormal", shape, dtype, seed);
}

Output TruncatedNormal(const Scope& scope, const Input& shape, DataType dtype,
                       const RandomSeed& seed) {
  return RandomNode(scope, "TruncatedNormal", shape, dtype, seed);
}

Output DropoutMask(const Scope& scope, const Input& shape, const Input& rate,
                   DataType dtype, const RandomSeed& seed) {
  // A literal rate (0.5) takes the mask's type.
  Output rate_out;
  if (rate.is_literal() && rate.tensor().dims() == 0) {
    double v = 0;
    (void)VisitNumericType(rate.tensor().dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      v = static_cast<double>(rate.tensor().scalar<T>());
      return absl::OkStatus();
    });
    rate_out =
        AsOutput(scope, dtype == DataType::kDouble
                            ? Tensor::Scalar<double>(v)
                            : Tensor::Scalar<float>(static_cast<float>(v)));
  } else {
    rate_out = AsOutput(scope, rate);
  }
  return NodeBuilder(scope, "DropoutMask", "DropoutMask")
      .Input(AsOutput(scope, shape))
      .Input(rate_out)
      .Attr("dtype", dtype)
      .Attr("seed", seed.seed)
      .Attr("seed2", seed.seed2)
      .Finalize()
      .output(0);
}

Output Dropout(const Scope& scope, const Input& x, const Input& rate,
               int64_t seed) {
  Scope s = scope.NewSubScope("Dropout");
  Output xo = AsOutput(s, x);
  if (!xo.valid()) return Output();
  Output mask = DropoutMask(s, Shape(s, xo), rate, xo.dtype(), {seed, 0});
  return Mul(s, xo, mask);
}

Fans ComputeFans(const TensorShape& shape) {
  Fans f;
  const int rank = shape.dims();
  if (rank == 0) return f;
  if (rank == 1) {
    f.fan_in = f.fan_out = static_cast<double>(shape.dim_size(0));
    return f;
  }
  double receptive = 1;
  for (int i = 0; i < rank - 2; ++i) receptive *= shape.dim_size(i);
  f.fan_in = static_cast<double>(shape.dim_size(rank - 2)) * receptive;
  f.fan_out = static_cast<double>(shape.dim_size(rank - 1)) * receptive;
  return f;
}

Output GlorotUniform(const Scope& scope, const TensorShape& shape, int64_t seed,
                     DataType dtype) {
  const Fans f = ComputeFans(shape);
  const double limit = std::sqrt(6.0 / std::max(1.0, f.fan_in + f.fan_out));
  return Uniform(scope.NewSubScope("GlorotUniform"), shape, -limit, limit, seed,
                 dtype);
}

Output GlorotNormal(const Scope& scope, const TensorShape& shape, int64_t seed,
                    DataType dtype) {
  const Fans f = ComputeFans(shape);
  const double stddev =
      std::sqrt(2.0 / std::max(1.0, f.fan_in + f.fan_out)) / kTruncatedStddev;
  return Truncated(scope.NewSubScope("GlorotNormal"), shape, stddev, 0, seed,
                   dtype);
}

Output HeUniform(const Scope& scope, const TensorShape& shape, int64_t seed,
                 DataType dtype) {
  const double limit =
      std::sqrt(6.0 / std::max(1.0, ComputeFans(shape).fan_in));
  return Uniform(scope.NewSubScope("HeUniform"), shape, -limit, limit, seed,
                 dtype);
}

Output HeNormal(const Scope& scope, const TensorShape& shape, int64_t seed,
                DataType dtype) {
  const double stddev =
      std::sqrt(2.0 / std::max(1.0, ComputeFans(shape).fan_in)) /
      kTruncatedStddev;
  return Truncated(scope.NewSubScope("HeNormal"), shape, stddev, 0, seed,
                   dtype);
}

Output TruncatedNormalInitializer(const Scope& scope, const TensorShape& shape,
                                  double stddev, double mean, int64_t seed,
                                  DataType dtype) {
  return Truncated(scope.NewSubScope("TruncatedNormalInitializer"), shape,
                   stddev, mean, seed, dtype);
}

Output RandomUniformInitializer(const Scope& scope, const TensorShape& shape,
                                double minval, double maxval, int64_t seed,
                                DataType dtype) {
  return Uniform(scope.NewSubScope("RandomUniformInitializer"), shape, minval,
                 maxval, seed, dtype);
}

}  // namespace ops
}  // namespace distflow
