// Helper ops that the gradients of array ops build (graph/gradients/
// array_grad.cc); not part of the public API.
#ifndef DISTFLOW_GRAPH_OPS_ARRAY_GRAD_OPS_H_
#define DISTFLOW_GRAPH_OPS_ARRAY_GRAD_OPS_H_

#include <cstdint>
#include <vector>

#include "distflow/scope.h"

namespace distflow {
namespace ops {
namespace internal {

// The inverse of permutation `perm` (an int32 or int64 vector): y[perm[i]] = i.
Output InvertPermutation(const Scope& scope, const Input& perm);

// Where each of the concatenated tensors starts in the result of Concat along
// `axis` (an int32 or int64 scalar, negative allowed): one vector per tensor of
// `shapes` (int32 vectors, the shapes of the inputs), zero except along the
// axis.
std::vector<Output> ConcatOffset(const Scope& scope, const Input& axis,
                                 const std::vector<Output>& shapes);

// The gradient of Tile: `dy` (the gradient of Tile's output) summed over the
// tiles into a tensor of shape `x_shape` (an int32 or int64 vector, the shape
// of Tile's input), whose every dimension must divide dy's.
Output TileGrad(const Scope& scope, const Input& dy, const Input& x_shape);

}  // namespace internal
}  // namespace ops
}  // namespace distflow

#endif  // DISTFLOW_GRAPH_OPS_ARRAY_GRAD_OPS_H_
