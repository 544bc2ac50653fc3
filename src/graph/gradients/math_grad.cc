// Gradients of math ops.
#include "distflow/ops.h"
#include "graph/attr_value.h"
#include "graph/gradients/grad_registry.h"

namespace distflow {
namespace {

// For c = op(a) op(b) with op = transpose or not, each input's gradient is a
// product of the incoming gradient g with the other input, arranged so that
// its shape is the input's.
absl::Status MatMulGrad(const Scope& scope, const Operation& op,
                        const std::vector<Output>& grads,
                        std::vector<Gradient>* dx) {
  bool ta = false, tb = false;
  const AttrMap& attrs = op.node()->attrs();
  if (absl::Status s = GetAttr(attrs, "transpose_a", &ta); !s.ok()) return s;
  if (absl::Status s = GetAttr(attrs, "transpose_b", &tb); !s.ok()) return s;
  const Output a = OpInput(op, 0), b = OpInput(op, 1), g = grads[0];
  auto mm = [&](const Output& x, const Output& y, bool tx, bool ty) {
    return ops::MatMul(scope, x, y, {tx, ty});
  };
  if (!ta && !tb) {  // c = a b
    (*dx)[0] = mm(g, b, false, true);
    (*dx)[1] = mm(a, g, true, false);
  } else if (!ta && tb) {  // c = a b'
    (*dx)[0] = mm(g, b, false, false);
    (*dx)[1] = mm(g, a, true, false);
  } else if (ta && !tb) {  // c = a' b
    (*dx)[0] = mm(b, g, false, true);
    (*dx)[1] = mm(a, g, false, false);
  } else {  // c = a' b'
    (*dx)[0] = mm(b, g, true, true);
    (*dx)[1] = mm(g, a, true, true);
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterMathGradients(GradRegistry* r) {
  AddGrad(r, "MatMul", MatMulGrad);
}

}  // namespace distflow
