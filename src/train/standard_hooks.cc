#include "train/standard_hooks.h"

#include <string>

#include "base/logging.h"
#include "base/status_macros.h"
#include "distflow/train/global_step.h"
#include "distflow/train/hooks.h"
#include "distflow/train/summary.h"

namespace distflow {
namespace train {

absl::StatusOr<std::vector<std::shared_ptr<SessionRunHook>>> StandardChiefHooks(
    const Scope& scope, const MonitoredTrainingSession::Options& options,
    const Scaffold& scaffold) {
  std::vector<std::shared_ptr<SessionRunHook>> hooks;
  const bool save_checkpoints =
      !options.checkpoint_dir.empty() &&
      (options.save_checkpoint_steps > 0 || options.save_checkpoint_secs > 0);
  if (!GetGlobalStep(scope).ok()) {
    if (save_checkpoints) {
      return absl::FailedPreconditionError(
          "MonitoredTrainingSession: saving checkpoints in checkpoint_dir "
          "needs the graph's global step (train::GetOrCreateGlobalStep), "
          "which numbers them");
    }
    DF_LOG(Info) << "The graph has no global step: no steps/sec, summaries "
                    "or checkpoints (create it with "
                    "train::GetOrCreateGlobalStep)";
    return hooks;
  }
  const std::string& summary_dir = options.summary_dir.empty()
                                       ? options.checkpoint_dir
                                       : options.summary_dir;
  Every summaries;
  if (options.save_summaries_steps > 0) {
    summaries = Every::Steps(options.save_summaries_steps);
  } else if (options.save_summaries_secs > 0) {
    summaries = Every::Secs(options.save_summaries_secs);
  }
  const bool save_summaries = !summary_dir.empty() &&
                              summaries.Validate("").ok() &&
                              MergeAllSummaries(scope).valid();
  std::shared_ptr<SummaryWriter> writer;
  if (!summary_dir.empty() &&
      (save_summaries || options.log_step_count_steps > 0)) {
    DF_ASSIGN_OR_RETURN(writer, SummaryWriter::Create(summary_dir));
  }
  if (options.log_step_count_steps > 0) {
    StepCounterHook::Options counter;
    counter.every = Every::Steps(options.log_step_count_steps);
    counter.writer = writer;
    hooks.push_back(StepCounterHook::Create(counter));
  }
  if (save_checkpoints) {
    CheckpointSaverHook::Options checkpoints;
    checkpoints.checkpoint_dir = options.checkpoint_dir;
    checkpoints.every = options.save_checkpoint_steps > 0
                            ? Every::Steps(options.save_checkpoint_steps)
                            : Every::Secs(options.save_checkpoint_secs);
    checkpoints.saver = scaffold.shared_saver();
    hooks.push_back(CheckpointSaverHook::Create(checkpoints));
  }
  if (save_summaries) {
    SummarySaverHook::Options saver;
    saver.every = summaries;
    saver.writer = writer;
    hooks.push_back(SummarySaverHook::Create(saver));
  }
  return hooks;
}

}  // namespace train
}  // namespace distflow
