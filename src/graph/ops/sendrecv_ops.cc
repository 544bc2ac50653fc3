// _Send and _Recv: the ends of a graph edge cut by partitioning. Inserted by
// the partitioner (graph/partition.h), never by users.
#include "graph/ops/op_families.h"
#include "graph/shape_inference.h"

namespace distflow {

void RegisterSendRecvOps(OpRegistry* r) {
  AddOp(r, OpDefBuilder("_Send")
               .Input("tensor", "T")
               .TypeAttr("T")
               .Attr("tensor_name", MakeAttr(""))
               .Attr("send_device", MakeAttr(""))
               .Attr("recv_device", MakeAttr(""))
               .Stateful()
               .SetShapeFn(shape_fns::NoOutputs));
  AddOp(r, OpDefBuilder("_Recv")
               .Output("tensor", "tensor_type")
               .TypeAttr("tensor_type")
               .Attr("tensor_name", MakeAttr(""))
               .Attr("send_device", MakeAttr(""))
               .Attr("recv_device", MakeAttr(""))
               .Attr("shape", MakeAttr(PartialTensorShape()))
               .Stateful()
               .SetShapeFn(shape_fns::FromShapeAttr));
}

}  // namespace distflow
