// The hooks a chief gets from MonitoredTrainingSession::Options, as
// TensorFlow's MonitoredTrainingSession makes them.
#ifndef DISTFLOW_TRAIN_STANDARD_HOOKS_H_
#define DISTFLOW_TRAIN_STANDARD_HOOKS_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "distflow/scope.h"
#include "distflow/train/monitored_session.h"
#include "distflow/train/session_run_hook.h"

namespace distflow {
namespace train {

// For a graph with a global step: a step counter every log_step_count_steps
// global steps and, given a summary directory (summary_dir, else
// checkpoint_dir) and summaries in the graph, a summary saver; both write to
// one SummaryWriter there; given a checkpoint_dir, a checkpoint saver with
// the scaffold's saver. FAILED_PRECONDITION if checkpoints are asked for and
// the graph has no global step.
absl::StatusOr<std::vector<std::shared_ptr<SessionRunHook>>> StandardChiefHooks(
    const Scope& scope, const MonitoredTrainingSession::Options& options,
    const Scaffold& scaffold);

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_STANDARD_HOOKS_H_
