// Variables are differentiated through their read values (a Variable is its
// read Output); the resource ops themselves carry no gradient.
#include "graph/gradients/grad_registry.h"

namespace distflow {

void RegisterStateGradients(GradRegistry* r) {
  for (const char* op :
       {"VarHandleOp", "ReadVariableOp", "AssignVariableOp",
        "AssignAddVariableOp", "AssignSubVariableOp", "VarIsInitializedOp"}) {
    AddNoGrad(r, op);
  }
}

}  // namespace distflow
