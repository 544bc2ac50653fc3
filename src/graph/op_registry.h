// The registry of op definitions, consulted when nodes are added to a graph.
#ifndef DISTFLOW_GRAPH_OP_REGISTRY_H_
#define DISTFLOW_GRAPH_OP_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "graph/op_def.h"

namespace distflow {

class OpRegistry {
 public:
  OpRegistry() = default;

  // The process-wide registry, holding every standard op (registered on first
  // use). Users may register their own ops in it. Thread-safe.
  static OpRegistry* Global();

  // ALREADY_EXISTS if an op of that name is registered.
  absl::Status Register(OpDef def);
  // NOT_FOUND naming the op if none is registered under `name`. The pointer
  // stays valid for the registry's lifetime.
  absl::StatusOr<const OpDef*> LookUp(const std::string& name) const;
  std::vector<std::string> OpNames() const;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<const OpDef>> ops_
      ABSL_GUARDED_BY(mu_);
};

// Registers distflow's standard ops (defined in graph/ops/, one function per op
// family).
void RegisterStandardOps(OpRegistry* registry);

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_OP_REGISTRY_H_
