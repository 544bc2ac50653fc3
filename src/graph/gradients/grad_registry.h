// Gradient functions by op type, one file per op family in graph/gradients/.
//
// A gradient function adds, in `scope`, the ops computing the gradient of the
// loss with respect to each input of `op`, given the gradient with respect to
// each of its outputs. It fills grad_inputs (sized to the op's inputs, all
// without value) for the inputs that are differentiable and leaves the others
// empty.
#ifndef DISTFLOW_GRAPH_GRADIENTS_GRAD_REGISTRY_H_
#define DISTFLOW_GRAPH_GRADIENTS_GRAD_REGISTRY_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "base/logging.h"
#include "distflow/gradients.h"
#include "distflow/scope.h"
#include "graph/attr_value.h"
#include "graph/graph.h"

namespace distflow {

// grad_outputs[i] is the dense gradient with respect to op.output(i) (zeros of
// its shape when no differentiated output depends on it).
using GradFunc =
    std::function<absl::Status(const Scope& scope, const Operation& op,
                               const std::vector<Output>& grad_outputs,
                               std::vector<Gradient>* grad_inputs)>;

class GradRegistry {
 public:
  // The process-wide registry holding every standard gradient (registered on
  // first use). Users may register gradients of their own ops in it.
  // Thread-safe.
  static GradRegistry* Global();

  // ALREADY_EXISTS if `op` already has a gradient (or is marked as having
  // none).
  absl::Status Register(const std::string& op, GradFunc fn);
  // Marks `op` as not differentiable (its inputs get no gradient through it),
  // such as Shape or ArgMax.
  absl::Status RegisterNoGradient(const std::string& op);

  // The gradient function of `op`; an empty function if the op is not
  // differentiable; NOT_FOUND naming the op if it has no registration.
  absl::StatusOr<GradFunc> Lookup(const std::string& op) const;

 private:
  mutable absl::Mutex mu_;
  // An empty function marks an op without gradient.
  absl::flat_hash_map<std::string, GradFunc> funcs_ ABSL_GUARDED_BY(mu_);
};

// Shorthands for the family files; a duplicate is a programming error.
inline void AddGrad(GradRegistry* r, const std::string& op, GradFunc fn) {
  absl::Status s = r->Register(op, std::move(fn));
  DF_CHECK(s.ok()) << s;
}
inline void AddNoGrad(GradRegistry* r, const std::string& op) {
  absl::Status s = r->RegisterNoGradient(op);
  DF_CHECK(s.ok()) << s;
}

// The input of `op` at `index`, as an Output (for gradient functions).
Output OpInput(const Operation& op, int index);

// One function per family file (graph/gradients/<family>_grad.cc).
void RegisterArrayGradients(GradRegistry* r);
void RegisterMathGradients(GradRegistry* r);
void RegisterNnGradients(GradRegistry* r);
void RegisterStateGradients(GradRegistry* r);
void RegisterEmbeddingGradients(GradRegistry* r);

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_GRADIENTS_GRAD_REGISTRY_H_
