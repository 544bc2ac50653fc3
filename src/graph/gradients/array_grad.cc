// Gradients of array ops: constants, identities and reshapes.
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/attr_value.h"
#include "graph/gradients/grad_registry.h"
#include "graph/ops/array_grad_ops.h"

namespace distflow {
namespace {

absl::Status IdentityGrad(const Scope& scope, const Operation& op,
                          const std::vector<Output>& grads,
                          std::vector<Gradient>* dx) {
  (*dx)[0] = grads[0];
  return absl::OkStatus();
}

// Reshape only moves elements' indices: reshape the gradient back.
absl::Status ReshapeGrad(const Scope& scope, const Operation& op,
                         const std::vector<Output>& grads,
                         std::vector<Gradient>* dx) {
  (*dx)[0] = ops::Reshape(scope, grads[0], ops::Shape(scope, OpInput(op, 0)));
  return absl::OkStatus();
}

// ---- Gradients of Transpose, ExpandDims, Squeeze, Concat, Split, Slice, Pad,
// Tile, Pack, Unpack, Gather and UnsortedSegmentSum ----

absl::Status TransposeGrad(const Scope& s, const Operation& op,
                           const std::vector<Output>& dy,
                           std::vector<Gradient>* dx) {
  (*dx)[0] = ops::Transpose(
      s, dy[0], ops::internal::InvertPermutation(s, OpInput(op, 1)));
  return s.status();
}

// ExpandDims and Squeeze only relabel dimensions: reshape the gradient back.
absl::Status ReshapeToInputGrad(const Scope& s, const Operation& op,
                                const std::vector<Output>& dy,
                                std::vector<Gradient>* dx) {
  (*dx)[0] = ops::Reshape(s, dy[0], ops::Shape(s, OpInput(op, 0)));
  return s.status();
}

// Each input gets the slice of the gradient where it landed in the output.
absl::Status ConcatGrad(const Scope& s, const Operation& op,
                        const std::vector<Output>& dy,
                        std::vector<Gradient>* dx) {
  const int n = op.node()->num_inputs() - 1;
  std::vector<Output> shapes;
  for (int i = 0; i < n; ++i) shapes.push_back(ops::Shape(s, OpInput(op, i)));
  std::vector<Output> offsets =
      ops::internal::ConcatOffset(s, OpInput(op, n), shapes);
  if (!s.ok()) return s.status();
  for (int i = 0; i < n; ++i) {
    (*dx)[i] = ops::Slice(s, dy[0], offsets[i], shapes[i]);
  }
  return s.status();
}

absl::Status SplitGrad(const Scope& s, const Operation& op,
                       const std::vector<Output>& dy,
                       std::vector<Gradient>* dx) {
  std::vector<Input> parts(dy.begin(), dy.end());
  (*dx)[1] = ops::Concat(s, parts, OpInput(op, 0));
  return s.status();
}

// The gradient of a slice is itself padded with zeros back to x's shape.
absl::Status SliceGrad(const Scope& s, const Operation& op,
                       const std::vector<Output>& dy,
                       std::vector<Gradient>* dx) {
  const Output begin = OpInput(op, 1);
  const Output x_shape = ops::Shape(s, OpInput(op, 0), begin.dtype());
  const Output dy_shape = ops::Shape(s, dy[0], begin.dtype());
  const Output after = ops::Sub(s, ops::Sub(s, x_shape, begin), dy_shape);
  (*dx)[0] = ops::Pad(s, dy[0], ops::Stack(s, {begin, after}, 1));
  return s.status();
}

// The gradient of padding is the slice of the gradient that x occupies.
absl::Status PadGrad(const Scope& s, const Operation& op,
                     const std::vector<Output>& dy, std::vector<Gradient>* dx) {
  const Output paddings = OpInput(op, 1);
  const Output before =
      ops::Reshape(s, ops::Slice(s, paddings, {0, 0}, {-1, 1}), {-1});
  (*dx)[0] = ops::Slice(s, dy[0], before,
                        ops::Shape(s, OpInput(op, 0), paddings.dtype()));
  return s.status();
}

absl::Status TileGradFn(const Scope& s, const Operation& op,
                        const std::vector<Output>& dy,
                        std::vector<Gradient>* dx) {
  (*dx)[0] = ops::internal::TileGrad(s, dy[0], ops::Shape(s, OpInput(op, 0)));
  return s.status();
}

absl::Status PackGrad(const Scope& s, const Operation& op,
                      const std::vector<Output>& dy,
                      std::vector<Gradient>* dx) {
  int64_t axis = 0;
  DF_RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "axis", &axis));
  const int n = op.node()->num_inputs();
  std::vector<Output> parts = ops::Unstack(s, dy[0], n, axis);
  if (!s.ok()) return s.status();
  for (int i = 0; i < n; ++i) (*dx)[i] = parts[i];
  return s.status();
}

absl::Status UnpackGrad(const Scope& s, const Operation& op,
                        const std::vector<Output>& dy,
                        std::vector<Gradient>* dx) {
  int64_t axis = 0;
  DF_RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "axis", &axis));
  std::vector<Input> parts(dy.begin(), dy.end());
  (*dx)[0] = ops::Stack(s, parts, axis);
  return s.status();
}

// Along axis 0 the gradient is sparse: the gathered rows and their gradients.
// Along another axis it is dense: the gradient's slices are summed into
// params' positions by UnsortedSegmentSum, with the gathered axis moved first.
absl::Status GatherGrad(const Scope& s, const Operation& op,
                        const std::vector<Output>& dy,
                        std::vector<Gradient>* dx) {
  const Output params = OpInput(op, 0);
  const Output indices = OpInput(op, 1);
  int64_t axis = 0;
  DF_RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "axis", &axis));
  const int rank = params.shape().dims();
  if (axis != 0 && rank < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gradient of Gather '", op.name(), "' along axis ", axis,
        " needs the rank of params, which is unknown; give params a shape"));
  }
  const Output shape = ops::Shape(s, params);
  const Output flat_indices = ops::Reshape(s, indices, {-1});
  if (axis == 0 || axis == -rank) {
    const Output inner = ops::Slice(s, shape, {1}, {-1});
    const Output values_shape =
        ops::Concat(s, {Tensor::Vector<int32_t>({-1}), inner}, 0);
    (*dx)[0] = IndexedSlices{flat_indices, ops::Reshape(s, dy[0], values_shape),
                             shape};
    return s.status();
  }
  const int a = static_cast<int>(axis < 0 ? axis + rank : axis);
  const Output outer = ops::Slice(s, shape, {0}, Tensor::Vector<int32_t>({a}));
  const Output m = ops::Reshape(s, ops::Size(s, indices), {1});
  // dy as [outer..., M, inner], then [M, outer..., inner].
  const Output grouped = ops::Reshape(
      s, dy[0], ops::Concat(s, {outer, m, Tensor::Vector<int32_t>({-1})}, 0));
  std::vector<int64_t> to_front = {a}, to_back;
  for (int i = 0; i < a; ++i) to_front.push_back(i);
  to_front.push_back(a + 1);
  for (int i = 1; i <= a; ++i) to_back.push_back(i);
  to_back.push_back(0);
  to_back.push_back(a + 1);
  const Output front =
      ops::Transpose(s, grouped, Tensor::Vector<int64_t>(to_front));
  const Output n =
      ops::Reshape(s, ops::Slice(s, shape, Tensor::Vector<int32_t>({a}), {1}),
                   Tensor(DataType::kInt32, TensorShape({0})));
  const Output summed = ops::UnsortedSegmentSum(s, front, flat_indices, n);
  (*dx)[0] = ops::Reshape(
      s, ops::Transpose(s, summed, Tensor::Vector<int64_t>(to_back)), shape);
  return s.status();
}

// Each data element receives the gradient of the segment it was added to;
// elements with a negative (dropped) id receive zeros.
absl::Status UnsortedSegmentSumGrad(const Scope& s, const Operation& op,
                                    const std::vector<Output>& dy,
                                    std::vector<Gradient>* dx) {
  const Output data = OpInput(op, 0);
  const Output ids = OpInput(op, 1);
  const Output gathered = ops::Gather(s, dy[0], ops::Maximum(s, ids, 0));
  // The keep mask of the ids, with size-1 dimensions for data's trailing
  // dimensions so that it broadcasts over them.
  const Output extra =
      ops::Reshape(s, ops::Sub(s, ops::Rank(s, data), ops::Rank(s, ids)), {1});
  const Output mask_shape =
      ops::Concat(s, {ops::Shape(s, ids), ops::Fill(s, extra, 1)}, 0);
  const Output keep = ops::Reshape(
      s, ops::Cast(s, ops::GreaterEqual(s, ids, 0), data.dtype()), mask_shape);
  (*dx)[0] = ops::Mul(s, gathered, keep);
  return s.status();
}

}  // namespace

void RegisterArrayGradients(GradRegistry* r) {
  AddGrad(r, "Identity", IdentityGrad);
  AddGrad(r, "Reshape", ReshapeGrad);
  for (const char* op :
       {"Const", "Placeholder", "Shape", "Fill", "ZerosLike", "OnesLike"}) {
    AddNoGrad(r, op);
  }
  AddGrad(r, "Transpose", TransposeGrad);
  AddGrad(r, "ExpandDims", ReshapeToInputGrad);
  AddGrad(r, "Squeeze", ReshapeToInputGrad);
  AddGrad(r, "Concat", ConcatGrad);
  AddGrad(r, "Split", SplitGrad);
  AddGrad(r, "Slice", SliceGrad);
  AddGrad(r, "Pad", PadGrad);
  AddGrad(r, "Tile", TileGradFn);
  AddGrad(r, "Pack", PackGrad);
  AddGrad(r, "Unpack", UnpackGrad);
  AddGrad(r, "Gather", GatherGrad);
  AddGrad(r, "UnsortedSegmentSum", UnsortedSegmentSumGrad);
  for (const char* op :
       {"OneHot", "Range", "Size", "Rank", "InvertPermutation", "ConcatOffset",
        "RandomUniform", "RandomStandardNormal", "TruncatedNormal",
        "DropoutMask"}) {
    AddNoGrad(r, op);
  }
}

}  // namespace distflow
