// Gradients of math ops: elementwise (with broadcasting), casts, selection,
// reductions, bias addition and matrix products.
#include <algorithm>
#include <vector>

#include "core/type_dispatch.h"
#include "distflow/ops.h"
#include "graph/attr_value.h"
#include "graph/gradients/grad_registry.h"
#include "graph/graph.h"
#include "graph/ops/reduction_ops.h"

namespace distflow {
namespace {

using Grads = std::vector<Gradient>;

absl::Status MatMulGrad(const Scope& scope, const Operation& op,
                        const std::vector<Output>& grads, Grads* dx) {
  // For c = op(a) op(b) with op = transpose or not, each input's gradient is
  // a product of the incoming gradient g with the other input, arranged so
  // that its shape is the input's.
  bool ta = false, tb = false;
  const AttrMap& attrs = op.node()->attrs();
  if (absl::Status s = GetAttr(attrs, "transpose_a", &ta); !s.ok()) return s;
  if (absl::Status s = GetAttr(attrs, "transpose_b", &tb); !s.ok()) return s;
  const Output a = OpInput(op, 0), b = OpInput(op, 1), g = grads[0];
  auto mm = [&](const Output& x, const Output& y, bool tx, bool ty) {
    return ops::MatMul(scope, x, y, {tx, ty});
  };
  if (!ta && !tb) {  // c = a b
    (*dx)[0] = mm(g, b, false, true);
    (*dx)[1] = mm(a, g, true, false);
  } else if (!ta && tb) {  // c = a b'
    (*dx)[0] = mm(g, b, false, false);
    (*dx)[1] = mm(g, a, true, false);
  } else if (ta && !tb) {  // c = a' b
    (*dx)[0] = mm(b, g, false, true);
    (*dx)[1] = mm(a, g, false, false);
  } else {  // c = a' b'
    (*dx)[0] = mm(b, g, true, true);
    (*dx)[1] = mm(g, a, true, true);
  }
  return absl::OkStatus();
}

// `grad` (of the broadcast shape of `x` and `others`) summed over the axes
// along which `x` was broadcast, in x's shape. When the static shapes settle
// which axes those are (x's sizes known, or an unknown size of x that no other
// input can broadcast along), this adds at most a Sum and a Reshape with
// constant axes, and nothing in the common case of x [batch, C] against a
// bias [C] or a scalar; otherwise the axes are computed when the graph runs.
Output SumToShapeOf(const Scope& scope, const Output& grad, const Output& x,
                    const std::vector<Output>& others) {
  const PartialTensorShape xs = x.shape();
  std::vector<PartialTensorShape> os;
  bool known_ranks = !xs.unknown_rank();
  int rank = xs.dims();
  for (const Output& o : others) {
    os.push_back(o.shape());
    known_ranks &= !os.back().unknown_rank();
    rank = std::max(rank, os.back().dims());
  }
  bool resolved = known_ranks;
  bool needs_reshape = false;
  std::vector<int32_t> axes;
  for (int d = 0; resolved && d < rank; ++d) {
    const int dx = xs.dims() - rank + d;
    const int64_t size = dx >= 0 ? xs.dim_size(dx) : 1;
    if (dx < 0 || size == 1) {
      axes.push_back(d);  // summing a size-1 output axis is harmless
      needs_reshape |= dx >= 0;
    } else if (size < 0) {
      // Unknown: x spans this axis unless another input may be larger here.
      for (const PartialTensorShape& o : os) {
        const int od = o.dims() - rank + d;
        if (od >= 0 && o.dim_size(od) != 1) resolved = false;
      }
    }
  }
  if (!resolved) {
    Output shape = ops::Shape(scope, x);
    auto r = ops::BroadcastGradientArgs(scope, ops::Shape(scope, grad), shape);
    return ops::Reshape(scope, ops::Sum(scope, grad, r.r1), shape);
  }
  Output summed = axes.empty()
                      ? grad
                      : ops::Sum(scope, grad, Tensor::Vector<int32_t>(axes));
  if (!needs_reshape) return summed;
  int unknown = 0;
  for (int64_t size : xs.dim_sizes()) unknown += size < 0;
  if (unknown <= 1) {  // Reshape infers one unknown size
    return ops::Reshape(scope, summed, Tensor::Vector<int64_t>(xs.dim_sizes()));
  }
  return ops::Reshape(scope, summed, ops::Shape(scope, x));
}

// Sets the gradients of a binary broadcasting op from the gradients gx, gy
// that its inputs would have without broadcasting.
void SetBinary(const Scope& scope, const Operation& op, const Output& gx,
               const Output& gy, Grads* dx) {
  const Output x = OpInput(op, 0), y = OpInput(op, 1);
  (*dx)[0] = SumToShapeOf(scope, gx, x, {y});
  (*dx)[1] = SumToShapeOf(scope, gy, y, {x});
}

absl::Status AddGradFn(const Scope& scope, const Operation& op,
                       const std::vector<Output>& g, Grads* dx) {
  SetBinary(scope, op, g[0], g[0], dx);
  return absl::OkStatus();
}

absl::Status SubGrad(const Scope& scope, const Operation& op,
                     const std::vector<Output>& g, Grads* dx) {
  SetBinary(scope, op, g[0], ops::Neg(scope, g[0]), dx);
  return absl::OkStatus();
}

absl::Status MulGrad(const Scope& scope, const Operation& op,
                     const std::vector<Output>& g, Grads* dx) {
  const Output x = OpInput(op, 0), y = OpInput(op, 1);
  SetBinary(scope, op, ops::Mul(scope, g[0], y), ops::Mul(scope, x, g[0]), dx);
  return absl::OkStatus();
}

absl::Status DivGrad(const Scope& scope, const Operation& op,
                     const std::vector<Output>& g, Grads* dx) {
  // d(x/y)/dx = 1/y; d(x/y)/dy = -x/y^2 = -z/y.
  const Output y = OpInput(op, 1), z = op.output(0);
  SetBinary(scope, op, ops::Div(scope, g[0], y),
            ops::Neg(scope, ops::Div(scope, ops::Mul(scope, g[0], z), y)), dx);
  return absl::OkStatus();
}

absl::Status PowGrad(const Scope& scope, const Operation& op,
                     const std::vector<Output>& g, Grads* dx) {
  // d(x^y)/dx = y x^(y-1); d(x^y)/dy = x^y log(x), taken as 0 where x <= 0
  // (where the real power is defined only for integer y).
  const Output x = OpInput(op, 0), y = OpInput(op, 1), z = op.output(0);
  Output gx =
      ops::Mul(scope, g[0],
               ops::Mul(scope, y, ops::Pow(scope, x, ops::Sub(scope, y, 1))));
  Output log_x = ops::Select(scope, ops::Greater(scope, x, 0),
                             ops::Log(scope, ops::Maximum(scope, x, 1e-30)),
                             ops::ZerosLike(scope, x));
  Output gy = ops::Mul(scope, g[0], ops::Mul(scope, z, log_x));
  SetBinary(scope, op, gx, gy, dx);
  return absl::OkStatus();
}

// Maximum and Minimum: the gradient goes to the input that was chosen (x on
// ties).
template <bool kMax>
absl::Status ExtremumGrad(const Scope& scope, const Operation& op,
                          const std::vector<Output>& g, Grads* dx) {
  const Output x = OpInput(op, 0), y = OpInput(op, 1);
  Output x_chosen =
      kMax ? ops::GreaterEqual(scope, x, y) : ops::LessEqual(scope, x, y);
  Output zeros = ops::ZerosLike(scope, g[0]);
  SetBinary(scope, op, ops::Select(scope, x_chosen, g[0], zeros),
            ops::Select(scope, x_chosen, zeros, g[0]), dx);
  return absl::OkStatus();
}

absl::Status SquaredDifferenceGrad(const Scope& scope, const Operation& op,
                                   const std::vector<Output>& g, Grads* dx) {
  const Output x = OpInput(op, 0), y = OpInput(op, 1);
  Output d = ops::Mul(scope, ops::Mul(scope, g[0], 2), ops::Sub(scope, x, y));
  SetBinary(scope, op, d, ops::Neg(scope, d), dx);
  return absl::OkStatus();
}

absl::Status SelectGrad(const Scope& scope, const Operation& op,
                        const std::vector<Output>& g, Grads* dx) {
  const Output cond = OpInput(op, 0);
  Output zeros = ops::ZerosLike(scope, g[0]);
  const Output t = OpInput(op, 1), e = OpInput(op, 2);
  (*dx)[1] =
      SumToShapeOf(scope, ops::Select(scope, cond, g[0], zeros), t, {cond, e});
  (*dx)[2] =
      SumToShapeOf(scope, ops::Select(scope, cond, zeros, g[0]), e, {cond, t});
  return absl::OkStatus();
}

// ---- Unary ops: dx = g * f'(x), written with x and y = f(x). ----

using UnaryRule = Output (*)(const Scope&, const Output& g, const Output& x,
                             const Output& y);

template <UnaryRule kRule>
absl::Status UnaryGrad(const Scope& scope, const Operation& op,
                       const std::vector<Output>& g, Grads* dx) {
  (*dx)[0] = kRule(scope, g[0], OpInput(op, 0), op.output(0));
  return absl::OkStatus();
}

Output NegRule(const Scope& s, const Output& g, const Output&, const Output&) {
  return ops::Neg(s, g);
}
Output ExpRule(const Scope& s, const Output& g, const Output&,
               const Output& y) {
  return ops::Mul(s, g, y);
}
Output LogRule(const Scope& s, const Output& g, const Output& x,
               const Output&) {
  return ops::Div(s, g, x);
}
Output SqrtRule(const Scope& s, const Output& g, const Output&,
                const Output& y) {
  return ops::Div(s, ops::Mul(s, g, 0.5), y);
}
Output RsqrtRule(const Scope& s, const Output& g, const Output&,
                 const Output& y) {
  // d(x^-1/2)/dx = -1/2 x^-3/2 = -1/2 y^3.
  return ops::Mul(s, ops::Mul(s, g, -0.5), ops::Mul(s, ops::Square(s, y), y));
}
Output SquareRule(const Scope& s, const Output& g, const Output& x,
                  const Output&) {
  return ops::Mul(s, ops::Mul(s, g, 2), x);
}
Output ReciprocalRule(const Scope& s, const Output& g, const Output&,
                      const Output& y) {
  return ops::Neg(s, ops::Mul(s, g, ops::Square(s, y)));
}
Output AbsRule(const Scope& s, const Output& g, const Output& x,
               const Output&) {
  return ops::Mul(s, g, ops::Sign(s, x));
}
Output SignRule(const Scope& s, const Output&, const Output& x, const Output&) {
  return ops::ZerosLike(s, x);
}

absl::Status CastGrad(const Scope& scope, const Operation& op,
                      const std::vector<Output>& g, Grads* dx) {
  // Only casts between floating types carry a gradient.
  const DataType src = op.node()->input_type(0);
  if (DataTypeIsFloating(src) && DataTypeIsFloating(g[0].dtype())) {
    (*dx)[0] = ops::Cast(scope, g[0], src);
  }
  return absl::OkStatus();
}

// ---- Reductions ----

// The gradient of a reduction's output reshaped to the input's rank, with
// size 1 along the reduced axes, ready to broadcast against the input.
Output GradWithKeptDims(const Scope& scope, const Operation& op,
                        const Output& g) {
  bool keep_dims = false;
  (void)GetAttr(op.node()->attrs(), "keep_dims", &keep_dims);
  if (keep_dims) return g;
  const Output x = OpInput(op, 0), axes = OpInput(op, 1);
  const PartialTensorShape xs = x.shape();
  const Tensor* axes_value = axes.node()->constant_value();
  if (axes_value != nullptr && !xs.unknown_rank()) {
    auto reduce = ReductionAxes(*axes_value, xs.dims());
    if (reduce.ok()) {
      std::vector<int64_t> dims;
      int unknown = 0;
      for (int d = 0; d < xs.dims(); ++d) {
        dims.push_back((*reduce)[d] ? 1 : xs.dim_size(d));
        unknown += dims.back() < 0;
      }
      // Reshape infers a single unknown size.
      if (unknown <= 1) {
        return ops::Reshape(scope, g, Tensor::Vector<int64_t>(dims));
      }
    }
  }
  // The kept-dims shape from the data: the same reduction with keep_dims.
  Output kept = ops::Sum(scope, x, axes, {/*keep_dims=*/true});
  return ops::Reshape(scope, g, ops::Shape(scope, kept));
}

// g_kept broadcast to x's shape.
Output BroadcastToInput(const Scope& scope, const Output& g_kept,
                        const Output& x) {
  return ops::Add(scope, ops::ZerosLike(scope, x), g_kept);
}

absl::Status SumGrad(const Scope& scope, const Operation& op,
                     const std::vector<Output>& g, Grads* dx) {
  (*dx)[0] = BroadcastToInput(scope, GradWithKeptDims(scope, op, g[0]),
                              OpInput(op, 0));
  return absl::OkStatus();
}

absl::Status MeanGrad(const Scope& scope, const Operation& op,
                      const std::vector<Output>& g, Grads* dx) {
  const Output x = OpInput(op, 0), y = op.output(0);
  const PartialTensorShape xs = x.shape(), ys = y.shape();
  Output count;
  if (xs.IsFullyDefined() && ys.IsFullyDefined()) {
    const int64_t n =
        ys.num_elements() == 0 ? 1 : xs.num_elements() / ys.num_elements();
    Tensor value(g[0].dtype(), TensorShape());
    absl::Status s = VisitNumericType(g[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      value.scalar<T>() = static_cast<T>(n);
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    count = ops::Const(scope, value);
  } else {
    Output in = ops::Prod(scope, ops::Shape(scope, x), 0);
    Output out =
        ops::Maximum(scope, ops::Prod(scope, ops::Shape(scope, y), 0), 1);
    count = ops::Cast(scope, ops::Div(scope, in, out), g[0].dtype());
  }
  Output scaled = ops::Div(scope, g[0], count);
  (*dx)[0] = BroadcastToInput(scope, GradWithKeptDims(scope, op, scaled), x);
  return absl::OkStatus();
}

// Max and Min: the gradient is shared equally by the elements that attain the
// extreme.
absl::Status ExtremeReductionGrad(const Scope& scope, const Operation& op,
                                  const std::vector<Output>& g, Grads* dx) {
  const Output x = OpInput(op, 0), axes = OpInput(op, 1);
  Output y_kept = GradWithKeptDims(scope, op, op.output(0));
  Output g_kept = GradWithKeptDims(scope, op, g[0]);
  Output hits = ops::Cast(scope, ops::Equal(scope, x, y_kept), x.dtype());
  Output count = ops::Sum(scope, hits, axes, {/*keep_dims=*/true});
  (*dx)[0] = ops::Mul(scope, hits, ops::Div(scope, g_kept, count));
  return absl::OkStatus();
}

absl::Status BiasAddGradFn(const Scope& scope, const Operation& op,
                           const std::vector<Output>& g, Grads* dx) {
  (*dx)[0] = g[0];
  (*dx)[1] = ops::BiasAddGrad(scope, g[0]);
  return absl::OkStatus();
}

}  // namespace

void RegisterMathGradients(GradRegistry* r) {
  AddGrad(r, "MatMul", MatMulGrad);
  AddGrad(r, "Add", AddGradFn);
  AddGrad(r, "Sub", SubGrad);
  AddGrad(r, "Mul", MulGrad);
  AddGrad(r, "Div", DivGrad);
  AddGrad(r, "Pow", PowGrad);
  AddGrad(r, "Maximum", ExtremumGrad<true>);
  AddGrad(r, "Minimum", ExtremumGrad<false>);
  AddGrad(r, "SquaredDifference", SquaredDifferenceGrad);
  AddGrad(r, "Select", SelectGrad);
  AddGrad(r, "Neg", UnaryGrad<NegRule>);
  AddGrad(r, "Exp", UnaryGrad<ExpRule>);
  AddGrad(r, "Log", UnaryGrad<LogRule>);
  AddGrad(r, "Sqrt", UnaryGrad<SqrtRule>);
  AddGrad(r, "Rsqrt", UnaryGrad<RsqrtRule>);
  AddGrad(r, "Square", UnaryGrad<SquareRule>);
  AddGrad(r, "Reciprocal", UnaryGrad<ReciprocalRule>);
  AddGrad(r, "Abs", UnaryGrad<AbsRule>);
  AddGrad(r, "Sign", UnaryGrad<SignRule>);
  AddGrad(r, "Cast", CastGrad);
  AddGrad(r, "Sum", SumGrad);
  AddGrad(r, "Mean", MeanGrad);
  AddGrad(r, "Max", ExtremeReductionGrad);
  AddGrad(r, "Min", ExtremeReductionGrad);
  AddGrad(r, "BiasAdd", BiasAddGradFn);
  // Piecewise constant or not differentiable: no gradient flows through.
  for (const char* op :
       {"Floor", "Equal", "NotEqual", "Less", "LessEqual", "Greater",
        "GreaterEqual", "LogicalAnd", "LogicalOr", "LogicalNot", "ArgMax",
        "ArgMin", "BroadcastGradientArgs"}) {
    AddNoGrad(r, op);
  }
}

}  // namespace distflow
