#include "train/standard_hooks.h"

#include "base/logging.h"
#include "distflow/train/global_step.h"
#include "distflow/train/hooks.h"

namespace distflow {
namespace train {

absl::StatusOr<std::vector<std::shared_ptr<SessionRunHook>>> StandardChiefHooks(
    const Scope& scope, const MonitoredTrainingSession::Options& options,
    const Scaffold& scaffold) {
  std::vector<std::shared_ptr<SessionRunHook>> hooks;
  const bool has_global_step = GetGlobalStep(scope).ok();
  if (options.log_step_count_steps > 0) {
    if (has_global_step) {
      StepCounterHook::Options counter;
      counter.every = Every::Steps(options.log_step_count_steps);
      hooks.push_back(StepCounterHook::Create(counter));
    } else {
      DF_LOG(Info) << "The graph has no global step: steps/sec will not be "
                      "logged (create it with train::GetOrCreateGlobalStep)";
    }
  }
  return hooks;
}

}  // namespace train
}  // namespace distflow
