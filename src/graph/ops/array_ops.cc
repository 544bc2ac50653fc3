// Constants, placeholders, identity and shape manipulation.
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/node_builder.h"
#include "graph/op_registry.h"
#include "graph/ops/op_families.h"
#include "graph/shape_inference.h"

namespace distflow {
namespace {

absl::Status ReshapeShape(InferenceContext* c) {
  DF_ASSIGN_OR_RETURN(PartialTensorShape target, c->InputAsShape(1));
  if (target.unknown_rank()) {
    c->set_output(0, target);
    return absl::OkStatus();
  }
  const PartialTensorShape& in = c->input(0);
  std::vector<int64_t> dims = target.dim_sizes();
  int inferred = -1;
  int64_t known_product = 1;
  for (int i = 0; i < static_cast<int>(dims.size()); ++i) {
    if (dims[i] == -1) {
      if (c->input_value(1) != nullptr && inferred >= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "shape ", target.DebugString(),
            " has more than one -1; at most one size is inferred"));
      }
      inferred = i;
    } else if (__builtin_mul_overflow(known_product, dims[i], &known_product)) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", target.DebugString(),
                       " has more elements than fit in int64"));
    }
  }
  const int64_t n = in.num_elements();
  if (c->input_value(1) != nullptr && n >= 0) {
    if (inferred >= 0) {
      if (known_product == 0 || n % known_product != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("cannot reshape ", in.DebugString(), " (", n,
                         " elements) to ", target.DebugString()));
      }
      dims[inferred] = n / known_product;
    } else if (known_product != n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot reshape ", in.DebugString(), " (", n, " elements) to ",
          target.DebugString(), " (", known_product, " elements)"));
    }
  }
  DF_ASSIGN_OR_RETURN(PartialTensorShape out,
                      PartialTensorShape::FromDims(dims));
  c->set_output(0, out);
  return absl::OkStatus();
}

}  // namespace

void RegisterArrayOps(OpRegistry* r) {
  AddOp(r, OpDefBuilder("Const")
               .Output("output", "dtype")
               .Attr("value", AttrType::kTensor)
               .TypeAttr("dtype")
               .Summary("A constant tensor.")
               .SetShapeFn([](InferenceContext* c) -> absl::Status {
                 Tensor value;
                 DF_RETURN_IF_ERROR(c->GetAttr("value", &value));
                 DataType dtype;
                 DF_RETURN_IF_ERROR(c->GetAttr("dtype", &dtype));
                 if (value.dtype() != dtype) {
                   return absl::InvalidArgumentError(
                       absl::StrCat("value is ", value.TypeString(),
                                    " but dtype is ", DataTypeName(dtype)));
                 }
                 c->set_output(0, value.shape());
                 return absl::OkStatus();
               }));
  AddOp(r, OpDefBuilder("Placeholder")
               .Output("output", "dtype")
               .TypeAttr("dtype")
               .Attr("shape", MakeAttr(PartialTensorShape()))
               .Summary("A value that must be fed when the graph runs.")
               .SetShapeFn(shape_fns::FromShapeAttr));
  AddOp(r, OpDefBuilder("Identity")
               .Input("input", "T")
               .Output("output", "T")
               .TypeAttr("T")
               .SetShapeFn(shape_fns::UnchangedShape));
  AddOp(r, OpDefBuilder("Shape")
               .Input("input", "T")
               .Output("output", "out_type")
               .TypeAttr("T")
               .Attr("out_type", MakeAttr(DataType::kInt32))
               .SetShapeFn([](InferenceContext* c) -> absl::Status {
                 DataType out_type;
                 DF_RETURN_IF_ERROR(c->GetAttr("out_type", &out_type));
                 if (out_type != DataType::kInt32 &&
                     out_type != DataType::kInt64) {
                   return absl::InvalidArgumentError(
                       "out_type must be int32 or int64");
                 }
                 c->set_output(0, PartialTensorShape({c->input(0).dims()}));
                 return absl::OkStatus();
               }));
  AddOp(r, OpDefBuilder("Reshape")
               .Input("tensor", "T")
               .Input("shape", "Tshape")
               .Output("output", "T")
               .TypeAttr("T")
               .TypeAttr("Tshape", {DataType::kInt32, DataType::kInt64})
               .SetShapeFn(ReshapeShape));
  for (const char* name : {"ZerosLike", "OnesLike"}) {
    AddOp(r, OpDefBuilder(name)
                 .Input("x", "T")
                 .Output("y", "T")
                 .TypeAttr("T", kNumericTypes)
                 .Summary("A tensor of x's shape and type filled with 0 (1).")
                 .SetShapeFn(shape_fns::UnchangedShape));
  }
  AddOp(r, OpDefBuilder("Fill")
               .Input("dims", "index_type")
               .Input("value", "T")
               .Output("output", "T")
               .TypeAttr("T")
               .TypeAttr("index_type", {DataType::kInt32, DataType::kInt64})
               .SetShapeFn([](InferenceContext* c) -> absl::Status {
                 if (c->input(1).dims() > 0) {
                   return absl::InvalidArgumentError(
                       absl::StrCat("value must be a scalar, got shape ",
                                    c->input(1).DebugString()));
                 }
                 DF_ASSIGN_OR_RETURN(PartialTensorShape shape,
                                     c->InputAsShape(0));
                 c->set_output(0, shape);
                 return absl::OkStatus();
               }));
}

namespace ops {

Output Const(const Scope& scope, const Input& value) {
  if (value.is_output()) {
    scope.UpdateStatus(
        absl::InvalidArgumentError("Const needs a value (a Tensor or a "
                                   "literal), not the output of another op"));
    return Output();
  }
  return ConstNode(scope, value.tensor());
}

Output Placeholder(const Scope& scope, DataType dtype,
                   const PartialTensorShape& shape) {
  return NodeBuilder(scope, "Placeholder", "Placeholder")
      .Attr("dtype", dtype)
      .Attr("shape", shape)
      .Finalize()
      .output(0);
}

Output Identity(const Scope& scope, const Input& input) {
  return NodeBuilder(scope, "Identity", "Identity")
      .Input(AsOutput(scope, input))
      .Finalize()
      .output(0);
}

Output Shape(const Scope& scope, const Input& input, DataType out_type) {
  return NodeBuilder(scope, "Shape", "Shape")
      .Input(AsOutput(scope, input))
      .Attr("out_type", out_type)
      .Finalize()
      .output(0);
}

Output Reshape(const Scope& scope, const Input& input, const Input& shape) {
  return NodeBuilder(scope, "Reshape", "Reshape")
      .Input(AsOutput(scope, input))
      .Input(AsOutput(scope, shape))
      .Finalize()
      .output(0);
}

Output ZerosLike(const Scope& scope, const Input& x) {
  return NodeBuilder(scope, "ZerosLike", "ZerosLike")
      .Input(AsOutput(scope, x))
      .Finalize()
      .output(0);
}
Output OnesLike(const Scope& scope, const Input& x) {
  return NodeBuilder(scope, "OnesLike", "OnesLike")
      .Input(AsOutput(scope, x))
      .Finalize()
      .output(0);
}

Output Fill(const Scope& scope, const Input& dims, const Input& value) {
  return NodeBuilder(scope, "Fill", "Fill")
      .Input(AsOutput(scope, dims))
      .Input(AsOutput(scope, value))
      .Finalize()
      .output(0);
}

namespace {
Output FillWith(const Scope& scope, const TensorShape& shape, DataType dtype,
                double value, const char* name) {
  Tensor scalar(dtype, TensorShape());
  absl::Status s = VisitNumericType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    scalar.scalar<T>() = static_cast<T>(value);
    return absl::OkStatus();
  });
  if (dtype == DataType::kBool) {
    scalar.scalar<bool>() = value != 0;
    s = absl::OkStatus();
  }
  if (!s.ok()) {
    scope.UpdateStatus(AddErrorContext(s, name));
    return Output();
  }
  Output dims = AsOutput(scope, Tensor::Vector<int64_t>(shape.dim_sizes()));
  Output fill_value = AsOutput(scope, scalar);
  return NodeBuilder(scope, "Fill", name)
      .Input(dims)
      .Input(fill_value)
      .Finalize()
      .output(0);
}
}  // namespace

Output Zeros(const Scope& scope, const TensorShape& shape, DataType dtype) {
  return FillWith(scope, shape, dtype, 0, "zeros");
}

Output Ones(const Scope& scope, const TensorShape& shape, DataType dtype) {
  return FillWith(scope, shape, dtype, 1, "ones");
}

}  // namespace ops
}  // namespace distflow
