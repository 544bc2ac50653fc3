// _Send and _Recv: the ends of a graph edge cut by partitioning; _GatherPack:
// the tensors of a packed transfer joined for one _Send. Inserted by the
// partitioner (graph/partition.h), never by users.
#include "absl/strings/str_cat.h"
#include "graph/ops/op_families.h"
#include "graph/shape_inference.h"

namespace distflow {
namespace {

// One dimension holding every element of the inputs, when all are known.
absl::Status GatherPackShape(InferenceContext* c) {
  int64_t total = 0;
  for (int i = 0; i < c->num_inputs(); ++i) {
    const int64_t n = c->input(i).num_elements();
    if (n < 0) {
      total = -1;
      break;
    }
    if (__builtin_add_overflow(total, n, &total)) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", i, " of shape ", c->input(i).DebugString(),
                       " brings the elements of the pack past int64"));
    }
  }
  c->set_output(0, PartialTensorShape({total}));
  return absl::OkStatus();
}

}  // namespace

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
  // The values' elements end to end, as a 1-D tensor that refers to them
  // instead of copying them (core/gathered_tensor.h).
  AddOp(r, OpDefBuilder("_GatherPack")
               .InputList("values", "T", "N")
               .Output("packed", "T")
               .IntAttr("N", 1)
               .TypeAttr("T")
               .SetShapeFn(GatherPackShape));
}

}  // namespace distflow
