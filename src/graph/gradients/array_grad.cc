// Gradients of array ops: constants, identities and reshapes.
#include "distflow/ops.h"
#include "graph/gradients/grad_registry.h"

namespace distflow {
namespace {

absl::Status IdentityGrad(const Scope& scope, const Operation& op,
                          const std::vector<Output>& grads,
                          std::vector<Gradient>* dx) {
  (*dx)[0] = grads[0];
  return absl::OkStatus();
}

// Reshape only moves elements' indices: reshape the gradient back.
absl::Status ReshapeGrad(const Scope& scope, const Operation& op,
                         const std::vector<Output>& grads,
                         std::vector<Gradient>* dx) {
  (*dx)[0] = ops::Reshape(scope, grads[0], ops::Shape(scope, OpInput(op, 0)));
  return absl::OkStatus();
}

}  // namespace

void RegisterArrayGradients(GradRegistry* r) {
  AddGrad(r, "Identity", IdentityGrad);
  AddGrad(r, "Reshape", ReshapeGrad);
  for (const char* op :
       {"Const", "Placeholder", "Shape", "Fill", "ZerosLike", "OnesLike"}) {
    AddNoGrad(r, op);
  }
}

}  // namespace distflow
