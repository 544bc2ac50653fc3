// Helpers shared by the hooks.
#ifndef DISTFLOW_TRAIN_HOOK_UTIL_H_
#define DISTFLOW_TRAIN_HOOK_UTIL_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distflow/ops/state_ops.h"
#include "distflow/scope.h"
#include "distflow/session.h"

namespace distflow {
namespace train {

// The graph's global step; FAILED_PRECONDITION naming `hook` if there is
// none.
absl::StatusOr<ops::Variable> GlobalStepFor(const Scope& scope,
                                            const std::string& hook);

// The global step's value now, read in a step of its own. A read in the same
// step as the training op may see the value before or after its update;
// hooks use this one to confirm before they act.
absl::StatusOr<int64_t> ReadGlobalStep(ClientSession* session,
                                       const ops::Variable& global_step);

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_HOOK_UTIL_H_
