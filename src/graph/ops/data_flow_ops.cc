// Data flow ops: gradient accumulators and FIFO queues, resources shared by
// the workers of a job (see distflow/ops/data_flow_ops.h).
#include "distflow/ops/data_flow_ops.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/graph.h"
#include "graph/node_builder.h"
#include "graph/ops/op_families.h"
#include "graph/shape_inference.h"

namespace distflow {
namespace {

// A handle op: a resource of `dtype` and `shape` on this device.
OpDefBuilder HandleOpDef(const char* name, std::vector<DataType> dtypes,
                         const char* summary) {
  OpDefBuilder b(name);
  b.Output("handle", DataType::kResource)
      .TypeAttr("dtype", std::move(dtypes))
      .Attr("shape", MakeAttr(PartialTensorShape()))
      .Attr("container", MakeAttr(""))
      .Attr("shared_name", MakeAttr(""))
      .Stateful()
      .Summary(summary)
      .SetShapeFn(shape_fns::Scalar);
  return b;
}

// Output 0 has the shape the handle (input 0) was declared with.
absl::Status HandleShape(InferenceContext* c) {
  c->set_output(0, c->input_handle_shape(0));
  return absl::OkStatus();
}

// Sparse take: indices [n], values [n, shape[1:]...], dense shape [rank].
absl::Status SparseTakeShape(InferenceContext* c) {
  const PartialTensorShape& shape = c->input_handle_shape(0);
  c->set_output(0, PartialTensorShape({-1}));
  if (shape.unknown_rank() || shape.dims() == 0) {
    c->set_output(1, PartialTensorShape());
    c->set_output(2, PartialTensorShape({-1}));
    return absl::OkStatus();
  }
  std::vector<int64_t> dims = shape.dim_sizes();
  dims[0] = -1;
  auto values = PartialTensorShape::FromDims(dims);
  if (!values.ok()) return values.status();
  c->set_output(1, *values);
  c->set_output(2, PartialTensorShape({shape.dims()}));
  return absl::OkStatus();
}

}  // namespace

void RegisterDataFlowOps(OpRegistry* r) {
  AddOp(r, HandleOpDef("ConditionalAccumulator", kFloatingTypes,
                       "A handle to an accumulator of dense gradients."));
  AddOp(r, HandleOpDef("SparseConditionalAccumulator", kFloatingTypes,
                       "A handle to an accumulator of sparse gradients."));
  AddOp(r, OpDefBuilder("AccumulatorApplyGradient")
               .Input("handle", DataType::kResource)
               .Input("local_step", DataType::kInt64)
               .Input("gradient", "dtype")
               .TypeAttr("dtype", kFloatingTypes)
               .Stateful()
               .Summary("Adds a gradient unless it is stale.")
               .SetShapeFn(shape_fns::NoOutputs));
  AddOp(r, OpDefBuilder("SparseAccumulatorApplyGradient")
               .Input("handle", DataType::kResource)
               .Input("local_step", DataType::kInt64)
               .Input("gradient_indices", "Tindices")
               .Input("gradient_values", "dtype")
               .TypeAttr("dtype", kFloatingTypes)
               .TypeAttr("Tindices", {DataType::kInt32, DataType::kInt64})
               .Stateful()
               .Summary("Adds a sparse gradient unless it is stale.")
               .SetShapeFn(shape_fns::NoOutputs));
  AddOp(r, OpDefBuilder("AccumulatorTakeGradient")
               .Input("handle", DataType::kResource)
               .Input("num_required", DataType::kInt32)
               .Output("average", "dtype")
               .TypeAttr("dtype", kFloatingTypes)
               .Stateful()
               .Summary("Waits for num_required gradients and yields their "
                        "average.")
               .SetShapeFn(HandleShape));
  AddOp(r, OpDefBuilder("SparseAccumulatorTakeGradient")
               .Input("handle", DataType::kResource)
               .Input("num_required", DataType::kInt32)
               .Output("indices", DataType::kInt64)
               .Output("values", "dtype")
               .Output("shape", DataType::kInt32)
               .TypeAttr("dtype", kFloatingTypes)
               .Stateful()
               .Summary("Waits for num_required sparse gradients and yields "
                        "their average.")
               .SetShapeFn(SparseTakeShape));
  AddOp(r, OpDefBuilder("AccumulatorSetGlobalStep")
               .Input("handle", DataType::kResource)
               .Input("new_global_step", DataType::kInt64)
               .Stateful()
               .SetShapeFn(shape_fns::NoOutputs));
  AddOp(r, OpDefBuilder("AccumulatorNumAccumulated")
               .Input("handle", DataType::kResource)
               .Output("num_accumulated", DataType::kInt32)
               .Stateful()
               .SetShapeFn(shape_fns::Scalar));
  AddOp(r, OpDefBuilder("AccumulatorClose")
               .Input("handle", DataType::kResource)
               .Stateful()
               .SetShapeFn(shape_fns::NoOutputs));

  AddOp(r, HandleOpDef("FIFOQueue", {}, "A handle to a FIFO queue."));
  for (const char* name : {"QueueEnqueue", "QueueEnqueueMany"}) {
    AddOp(r, OpDefBuilder(name)
                 .Input("handle", DataType::kResource)
                 .Input("element", "dtype")
                 .TypeAttr("dtype")
                 .Stateful()
                 .SetShapeFn(shape_fns::NoOutputs));
  }
  AddOp(r, OpDefBuilder("QueueDequeue")
               .Input("handle", DataType::kResource)
               .Output("element", "dtype")
               .TypeAttr("dtype")
               .Stateful()
               .SetShapeFn(HandleShape));
  AddOp(r, OpDefBuilder("QueueSize")
               .Input("handle", DataType::kResource)
               .Output("size", DataType::kInt32)
               .Stateful()
               .SetShapeFn(shape_fns::Scalar));
  AddOp(r, OpDefBuilder("QueueClose")
               .Input("handle", DataType::kResource)
               .Stateful()
               .SetShapeFn(shape_fns::NoOutputs));
}

namespace ops {
namespace {

Output Handle(const Scope& scope, const char* op, DataType dtype,
              const PartialTensorShape& shape, const std::string& shared_name) {
  return NodeBuilder(scope, op, op)
      .Attr("dtype", dtype)
      .Attr("shape", shape)
      .Attr("shared_name", shared_name)
      .Finalize()
      .output(0);
}

// The dtype attribute of the op that made `handle`, which must be one of
// `handle_ops`; records an error naming `op` otherwise.
DataType HandleDType(const Scope& scope, const char* op, const Output& handle,
                     const std::vector<std::string>& handle_ops) {
  DataType dtype = DataType::kInvalid;
  if (!scope.ok()) return dtype;
  Node* node = handle.node();
  bool known = false;
  for (const std::string& h : handle_ops) {
    known |= node != nullptr && node->op() == h;
  }
  if (!known || !GetAttr(node->attrs(), "dtype", &dtype).ok()) {
    scope.UpdateStatus(absl::InvalidArgumentError(absl::StrCat(
        op, " needs the handle made by ", handle_ops.front(), ", got ",
        handle.valid() ? handle.name() : "an invalid output")));
    return DataType::kInvalid;
  }
  return dtype;
}

// An op on the resource of `handle`, colocated with it.
NodeBuilder OnHandle(const Scope& scope, const char* op, const Output& handle) {
  NodeBuilder b(scope.ColocateWith(handle.op()), op, op);
  b.Input(handle);
  return b;
}

const std::vector<std::string>& AccumulatorOps() {
  static const auto* ops = new std::vector<std::string>{
      "ConditionalAccumulator", "SparseConditionalAccumulator"};
  return *ops;
}

}  // namespace

Output ConditionalAccumulator(const Scope& scope, DataType dtype,
                              const PartialTensorShape& shape,
                              const std::string& shared_name) {
  return Handle(scope, "ConditionalAccumulator", dtype, shape, shared_name);
}

Output SparseConditionalAccumulator(const Scope& scope, DataType dtype,
                                    const PartialTensorShape& shape,
                                    const std::string& shared_name) {
  return Handle(scope, "SparseConditionalAccumulator", dtype, shape,
                shared_name);
}

Operation AccumulatorApplyGradient(const Scope& scope, const Output& handle,
                                   const Input& local_step,
                                   const Input& gradient) {
  const DataType dtype =
      HandleDType(scope, "AccumulatorApplyGradient", handle, AccumulatorOps());
  Scope s = scope.ColocateWith(handle.op());
  return OnHandle(scope, "AccumulatorApplyGradient", handle)
      .Input(AsOutputOfType(s, local_step, DataType::kInt64))
      .Input(AsOutputOfType(s, gradient, dtype))
      .Finalize();
}

Operation SparseAccumulatorApplyGradient(const Scope& scope,
                                         const Output& handle,
                                         const Input& local_step,
                                         const Input& indices,
                                         const Input& values) {
  const DataType dtype = HandleDType(scope, "SparseAccumulatorApplyGradient",
                                     handle, AccumulatorOps());
  Scope s = scope.ColocateWith(handle.op());
  return OnHandle(scope, "SparseAccumulatorApplyGradient", handle)
      .Input(AsOutputOfType(s, local_step, DataType::kInt64))
      .Input(AsOutput(s, indices))
      .Input(AsOutputOfType(s, values, dtype))
      .Finalize();
}

Output AccumulatorTakeGradient(const Scope& scope, const Output& handle,
                               const Input& num_required) {
  const DataType dtype =
      HandleDType(scope, "AccumulatorTakeGradient", handle, AccumulatorOps());
  return OnHandle(scope, "AccumulatorTakeGradient", handle)
      .Input(AsOutputOfType(scope.ColocateWith(handle.op()), num_required,
                            DataType::kInt32))
      .Attr("dtype", dtype)
      .Finalize()
      .output(0);
}

IndexedSlices SparseAccumulatorTakeGradient(const Scope& scope,
                                            const Output& handle,
                                            const Input& num_required) {
  const DataType dtype = HandleDType(scope, "SparseAccumulatorTakeGradient",
                                     handle, AccumulatorOps());
  Operation take = OnHandle(scope, "SparseAccumulatorTakeGradient", handle)
                       .Input(AsOutputOfType(scope.ColocateWith(handle.op()),
                                             num_required, DataType::kInt32))
                       .Attr("dtype", dtype)
                       .Finalize();
  if (!take.valid()) return IndexedSlices();
  return IndexedSlices{take.output(0), take.output(1), take.output(2)};
}

Operation AccumulatorSetGlobalStep(const Scope& scope, const Output& handle,
                                   const Input& new_global_step) {
  return OnHandle(scope, "AccumulatorSetGlobalStep", handle)
      .Input(AsOutputOfType(scope.ColocateWith(handle.op()), new_global_step,
                            DataType::kInt64))
      .Finalize();
}

Output AccumulatorNumAccumulated(const Scope& scope, const Output& handle) {
  return OnHandle(scope, "AccumulatorNumAccumulated", handle)
      .Finalize()
      .output(0);
}

Operation AccumulatorClose(const Scope& scope, const Output& handle) {
  return OnHandle(scope, "AccumulatorClose", handle).Finalize();
}

Output FIFOQueue(const Scope& scope, DataType dtype,
                 const PartialTensorShape& element_shape,
                 const std::string& shared_name) {
  return Handle(scope, "FIFOQueue", dtype, element_shape, shared_name);
}

Operation QueueEnqueue(const Scope& scope, const Output& queue,
                       const Input& element) {
  const DataType dtype =
      HandleDType(scope, "QueueEnqueue", queue, {"FIFOQueue"});
  return OnHandle(scope, "QueueEnqueue", queue)
      .Input(AsOutputOfType(scope.ColocateWith(queue.op()), element, dtype))
      .Finalize();
}

Operation QueueEnqueueMany(const Scope& scope, const Output& queue,
                           const Input& elements) {
  const DataType dtype =
      HandleDType(scope, "QueueEnqueueMany", queue, {"FIFOQueue"});
  return OnHandle(scope, "QueueEnqueueMany", queue)
      .Input(AsOutputOfType(scope.ColocateWith(queue.op()), elements, dtype))
      .Finalize();
}

Output QueueDequeue(const Scope& scope, const Output& queue) {
  const DataType dtype =
      HandleDType(scope, "QueueDequeue", queue, {"FIFOQueue"});
  return OnHandle(scope, "QueueDequeue", queue)
      .Attr("dtype", dtype)
      .Finalize()
      .output(0);
}

Output QueueSize(const Scope& scope, const Output& queue) {
  return OnHandle(scope, "QueueSize", queue).Finalize().output(0);
}

Operation QueueClose(const Scope& scope, const Output& queue) {
  return OnHandle(scope, "QueueClose", queue).Finalize();
}

}  // namespace ops
}  // namespace distflow
