// The op families of distflow's standard op set, one file each in graph/ops/.
#ifndef DISTFLOW_GRAPH_OPS_OP_FAMILIES_H_
#define DISTFLOW_GRAPH_OPS_OP_FAMILIES_H_

#include "core/type_dispatch.h"
#include "graph/op_registry.h"

namespace distflow {

void RegisterArrayOps(OpRegistry* registry);
void RegisterControlOps(OpRegistry* registry);
void RegisterMathOps(OpRegistry* registry);
void RegisterStateOps(OpRegistry* registry);

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_OPS_OP_FAMILIES_H_
