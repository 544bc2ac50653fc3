#include "graph/op_registry.h"
#include "graph/ops/op_families.h"

namespace distflow {

void RegisterStandardOps(OpRegistry* registry) {
  RegisterArrayOps(registry);
  RegisterConcatOps(registry);
  RegisterGatherOps(registry);
  RegisterRandomOps(registry);
  RegisterTransformOps(registry);
  RegisterControlOps(registry);
  RegisterMathOps(registry);
  RegisterNnOps(registry);
  RegisterConvOps(registry);
  RegisterStateOps(registry);
  RegisterTrainingOps(registry);
  RegisterSendRecvOps(registry);
  RegisterEmbeddingOps(registry);
  RegisterDataFlowOps(registry);
  RegisterStalenessOps(registry);
  RegisterSummaryOps(registry);
  RegisterCheckpointOps(registry);
}

}  // namespace distflow
