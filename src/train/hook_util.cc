#include "train/hook_util.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "distflow/train/global_step.h"

namespace distflow {
namespace train {

absl::StatusOr<ops::Variable> GlobalStepFor(const Scope& scope,
                                            const std::string& hook) {
  auto step = GetGlobalStep(scope);
  if (step.ok()) return step;
  return absl::FailedPreconditionError(absl::StrCat(
      hook, " needs the graph's global step: ", step.status().message()));
}

absl::StatusOr<int64_t> ReadGlobalStep(ClientSession* session,
                                       const ops::Variable& global_step) {
  DF_ASSIGN_OR_RETURN(std::vector<Tensor> out, session->Run({global_step}));
  return out[0].scalar<int64_t>();
}

}  // namespace train
}  // namespace distflow
