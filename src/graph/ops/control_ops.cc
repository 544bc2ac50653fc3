// NoOp, grouping, and the argument and return-value ops that connect a running
// graph to the caller's feeds and fetches.
#include "base/logging.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/node_builder.h"
#include "graph/ops/op_families.h"
#include "graph/shape_inference.h"

namespace distflow {

void RegisterControlOps(OpRegistry* r) {
  AddOp(r, OpDefBuilder("NoOp")
               .Summary("Does nothing.")
               .SetShapeFn(shape_fns::NoOutputs));
  // _Arg and _Retval are inserted by the runtime when it prepares a graph for a
  // call: a fed tensor enters as an _Arg, a fetched one leaves through a
  // _Retval. Users never create them.
  AddOp(r, OpDefBuilder("_Arg")
               .Output("output", "T")
               .TypeAttr("T")
               .IntAttr("index", 0)
               .Attr("shape", MakeAttr(PartialTensorShape()))
               .SetShapeFn(shape_fns::FromShapeAttr));
  AddOp(r, OpDefBuilder("_Retval")
               .Input("input", "T")
               .TypeAttr("T")
               .IntAttr("index", 0)
               .SetShapeFn(shape_fns::NoOutputs));
}

namespace ops {

Operation NoOp(const Scope& scope) {
  return NodeBuilder(scope, "NoOp", "NoOp").Finalize();
}

Operation Group(const Scope& scope, const std::vector<Operation>& ops) {
  NodeBuilder b(scope, "NoOp", "group");
  for (const Operation& op : ops) b.ControlInput(op);
  return b.Finalize();
}

}  // namespace ops
}  // namespace distflow
