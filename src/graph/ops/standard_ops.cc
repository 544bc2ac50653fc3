#include "graph/op_registry.h"
#include "graph/ops/op_families.h"

namespace distflow {

void RegisterStandardOps(OpRegistry* registry) {
  RegisterArrayOps(registry);
  RegisterControlOps(registry);
  RegisterMathOps(registry);
  RegisterStateOps(registry);
  RegisterSendRecvOps(registry);
}

}  // namespace distflow
