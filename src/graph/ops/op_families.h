// The op families of distflow's standard op set, one file each in graph/ops/.
#ifndef DISTFLOW_GRAPH_OPS_OP_FAMILIES_H_
#define DISTFLOW_GRAPH_OPS_OP_FAMILIES_H_

#include "base/logging.h"
#include "core/type_dispatch.h"
#include "graph/op_registry.h"

namespace distflow {

// Registers a standard op; a duplicate name is a programming error.
inline void AddOp(OpRegistry* registry, OpDefBuilder builder) {
  absl::Status s = registry->Register(std::move(builder).Build());
  DF_CHECK(s.ok()) << s;
}

void RegisterArrayOps(OpRegistry* registry);
void RegisterConcatOps(OpRegistry* registry);
void RegisterGatherOps(OpRegistry* registry);
void RegisterRandomOps(OpRegistry* registry);
void RegisterTransformOps(OpRegistry* registry);
void RegisterControlOps(OpRegistry* registry);
void RegisterMathOps(OpRegistry* registry);
// Called by RegisterMathOps (graph/ops/reduction_ops.cc).
void RegisterReductionOps(OpRegistry* registry);
void RegisterNnOps(OpRegistry* registry);
void RegisterConvOps(OpRegistry* registry);
void RegisterStateOps(OpRegistry* registry);
void RegisterTrainingOps(OpRegistry* registry);
void RegisterSendRecvOps(OpRegistry* registry);
void RegisterEmbeddingOps(OpRegistry* registry);
void RegisterDataFlowOps(OpRegistry* registry);
void RegisterStalenessOps(OpRegistry* registry);
void RegisterSummaryOps(OpRegistry* registry);
void RegisterCheckpointOps(OpRegistry* registry);

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_OPS_OP_FAMILIES_H_
