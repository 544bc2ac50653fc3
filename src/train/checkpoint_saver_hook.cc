// CheckpointSaverHook: the chief's checkpoints, every N steps or seconds and
// at the end.
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "distflow/train/hooks.h"
#include "distflow/train/saver.h"
#include "train/hook_util.h"
#include "train/session_manager.h"

namespace distflow {
namespace train {

std::unique_ptr<CheckpointSaverHook> CheckpointSaverHook::Create(
    const Options& options) {
  return std::unique_ptr<CheckpointSaverHook>(new CheckpointSaverHook(options));
}

absl::Status CheckpointSaverHook::Begin(const Scope& scope) {
  DF_RETURN_IF_ERROR(options_.every.Validate("CheckpointSaverHook"));
  if (options_.checkpoint_dir.empty()) {
    return absl::InvalidArgumentError(
        "CheckpointSaverHook: give the directory to save checkpoints in");
  }
  DF_ASSIGN_OR_RETURN(global_step_,
                      GlobalStepFor(scope, "CheckpointSaverHook"));
  if (options_.saver == nullptr) {
    DF_ASSIGN_OR_RETURN(options_.saver, Saver::Create(scope));
  }
  return absl::OkStatus();
}

absl::Status CheckpointSaverHook::AfterCreateSession(ClientSession* session) {
  // The model was just restored or initialized: the period starts now.
  DF_ASSIGN_OR_RETURN(int64_t step, ReadGlobalStep(session, global_step_));
  timer_.Fire(step);
  last_saved_ = step;
  return absl::OkStatus();
}

SessionRunArgs CheckpointSaverHook::BeforeRun(SessionRunContext* context) {
  return SessionRunArgs{{global_step_}, {}, {}};
}

absl::Status CheckpointSaverHook::Save(ClientSession* session, int64_t step) {
  DF_ASSIGN_OR_RETURN(
      std::string prefix,
      options_.saver->Save(session, options_.checkpoint_dir, step));
  DF_LOG(Info) << "Saved checkpoint " << prefix << " at global step " << step;
  timer_.Fire(step);
  last_saved_ = step;
  return absl::OkStatus();
}

absl::Status CheckpointSaverHook::AfterRun(SessionRunContext* context,
                                           const SessionRunValues& values) {
  // The value read in the step may predate its increment: when it says a
  // save may be due, read the step again and save at that value.
  const int64_t seen = values.results[0].scalar<int64_t>();
  if (!timer_.Due(seen + 1)) return absl::OkStatus();
  DF_ASSIGN_OR_RETURN(int64_t step,
                      ReadGlobalStep(context->session(), global_step_));
  if (!timer_.Due(step)) return absl::OkStatus();
  absl::Status s = Save(context->session(), step);
  // A task that went away is the session's to recover from. Anything else (a
  // full disk, a directory that went read-only) costs this checkpoint only:
  // training goes on and the next interval tries again.
  if (s.ok() || IsRecoverable(s)) return s;
  DF_LOG(Warning) << "CheckpointSaverHook: no checkpoint in '"
                  << options_.checkpoint_dir << "' at global step " << step
                  << "; training goes on and the next save is tried in one "
                     "interval: "
                  << s;
  timer_.Fire(step);
  return absl::OkStatus();
}

absl::Status CheckpointSaverHook::End(ClientSession* session) {
  DF_ASSIGN_OR_RETURN(int64_t step, ReadGlobalStep(session, global_step_));
  if (last_saved_ == step) return absl::OkStatus();
  return Save(session, step);
}

}  // namespace train
}  // namespace distflow
