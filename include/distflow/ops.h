// Op constructors: each adds a node to the scope's graph and returns its
// output(s). One header per op family, all included here.
//
// Errors (such as MatMul of [1,4] by [3,1]) are recorded in the scope; see
// distflow/scope.h.
#ifndef DISTFLOW_OPS_H_
#define DISTFLOW_OPS_H_

#include "distflow/ops/array_ops.h"
#include "distflow/ops/data_flow_ops.h"
#include "distflow/ops/embedding_ops.h"
#include "distflow/ops/math_ops.h"
#include "distflow/ops/nn_ops.h"
#include "distflow/ops/random_ops.h"
#include "distflow/ops/state_ops.h"
#include "distflow/ops/summary_ops.h"
#include "distflow/ops/training_ops.h"

#endif  // DISTFLOW_OPS_H_
