// Ops that write variables to checkpoint shard files and read them back, one
// op per device so that every ps task does its own file I/O (train/saver.h
// builds them).
#ifndef DISTFLOW_GRAPH_OPS_CHECKPOINT_OPS_H_
#define DISTFLOW_GRAPH_OPS_CHECKPOINT_OPS_H_

#include <string>
#include <vector>

#include "distflow/ops/state_ops.h"
#include "distflow/scope.h"

namespace distflow {
namespace ops {

// Writes the current values of `variables` (all on one device; the op runs
// there) into one safetensors file at `path` (a string scalar), named
// `tensor_names`, through a temporary name and a rename.
Operation SaveShard(const Scope& scope, const Output& path,
                    const std::vector<Variable>& variables,
                    const std::vector<std::string>& tensor_names);

// Assigns to each of `variables` (all on one device) the tensor
// `tensor_names[i]` read from the safetensors file `files[i]` (`files` is a
// string vector, one entry per variable, so that each variable is read from
// whichever shard holds it).
Operation RestoreShard(const Scope& scope, const Output& files,
                       const std::vector<Variable>& variables,
                       const std::vector<std::string>& tensor_names);

}  // namespace ops
}  // namespace distflow

#endif  // DISTFLOW_GRAPH_OPS_CHECKPOINT_OPS_H_
