#include "distflow/train/global_step.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/graph.h"

namespace distflow {
namespace train {
namespace {
// Holds the global step's handle name: one per graph.
constexpr char kGlobalStepCollection[] = "global_step";
}  // namespace

absl::StatusOr<ops::Variable> GetGlobalStep(const Scope& scope) {
  const std::vector<std::string>& names =
      scope.graph()->GetCollection(kGlobalStepCollection);
  if (!names.empty()) {
    Node* node = scope.graph()->FindNode(names.front());
    ops::Variable step =
        node ? ops::Variable::FromHandle(Output(node, 0)) : ops::Variable();
    if (step.valid()) return step;
  }
  return absl::NotFoundError(
      "the graph has no global step: create it with "
      "train::GetOrCreateGlobalStep(scope)");
}

ops::Variable GetOrCreateGlobalStep(const Scope& scope) {
  auto existing = GetGlobalStep(scope);
  if (existing.ok()) return *existing;
  ops::VariableOptions options;
  options.trainable = false;
  ops::Variable step(
      scope.WithNoControlDependencies().WithOpName("global_step"),
      Tensor::Scalar<int64_t>(0), options);
  if (step.handle().valid()) {
    scope.graph()->AddToCollection(kGlobalStepCollection,
                                   step.handle().op().name());
  }
  return step;
}

}  // namespace train
}  // namespace distflow
