// Staleness barrier ops: per-worker step counters that bound how far
// asynchronous workers drift apart (see distflow/ops/data_flow_ops.h).
#include "distflow/ops/data_flow_ops.h"
#include "graph/node_builder.h"
#include "graph/ops/op_families.h"
#include "graph/shape_inference.h"

namespace distflow {

void RegisterStalenessOps(OpRegistry* r) {
  AddOp(r, OpDefBuilder("StalenessBarrier")
               .Output("handle", DataType::kResource)
               .IntAttr("num_workers", 1)
               .IntAttr("max_staleness", 0)
               .Attr("container", MakeAttr(""))
               .Attr("shared_name", MakeAttr(""))
               .Stateful()
               .Summary("A handle to per-worker step counters that keep "
                        "workers within max_staleness steps of each other.")
               .SetShapeFn(shape_fns::Scalar));
  AddOp(r, OpDefBuilder("StalenessBarrierAdvance")
               .Input("handle", DataType::kResource)
               .Output("step", DataType::kInt64)
               .IntAttr("worker", 0)
               .Stateful()
               .Summary("Counts a finished step of the worker, then waits "
                        "until the slowest worker is close enough.")
               .SetShapeFn(shape_fns::Scalar));
  AddOp(r, OpDefBuilder("StalenessBarrierRetire")
               .Input("handle", DataType::kResource)
               .IntAttr("worker", 0)
               .Stateful()
               .SetShapeFn(shape_fns::NoOutputs));
  AddOp(r, OpDefBuilder("StalenessBarrierSteps")
               .Input("handle", DataType::kResource)
               .Output("steps", DataType::kInt64)
               .Stateful()
               .SetShapeFn([](InferenceContext* c) {
                 c->set_output(0, PartialTensorShape({-1}));
                 return absl::OkStatus();
               }));
}

namespace ops {

Output StalenessBarrier(const Scope& scope, int num_workers,
                        int64_t max_staleness, const std::string& shared_name) {
  return NodeBuilder(scope, "StalenessBarrier", "StalenessBarrier")
      .Attr("num_workers", num_workers)
      .Attr("max_staleness", max_staleness)
      .Attr("shared_name", shared_name)
      .Finalize()
      .output(0);
}

Output StalenessBarrierAdvance(const Scope& scope, const Output& barrier,
                               int worker) {
  return NodeBuilder(scope.ColocateWith(barrier.op()),
                     "StalenessBarrierAdvance", "StalenessBarrierAdvance")
      .Input(barrier)
      .Attr("worker", worker)
      .Finalize()
      .output(0);
}

Operation StalenessBarrierRetire(const Scope& scope, const Output& barrier,
                                 int worker) {
  return NodeBuilder(scope.ColocateWith(barrier.op()), "StalenessBarrierRetire",
                     "StalenessBarrierRetire")
      .Input(barrier)
      .Attr("worker", worker)
      .Finalize();
}

Output StalenessBarrierSteps(const Scope& scope, const Output& barrier) {
  return NodeBuilder(scope.ColocateWith(barrier.op()), "StalenessBarrierSteps",
                     "StalenessBarrierSteps")
      .Input(barrier)
      .Finalize()
      .output(0);
}

}  // namespace ops
}  // namespace distflow
