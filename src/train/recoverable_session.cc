// A side session that re-creates itself, ready, after a task restart.
#include "distflow/train/recoverable_session.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "distflow/train/saver.h"
#include "train/session_manager.h"

namespace distflow {
namespace train {

absl::StatusOr<std::unique_ptr<RecoverableSession>> RecoverableSession::Create(
    const Scope& scope, const MonitoredTrainingSession::Options& options) {
  DF_RETURN_IF_ERROR(scope.status());
  if (!(options.max_wait_secs > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("RecoverableSession: max_wait_secs must be positive (got ",
                     options.max_wait_secs, ")"));
  }
  // As the monitored session makes its scaffold: the chief restores from
  // checkpoint_dir with a saver of its own when given none.
  Scaffold::Options scaffold_options = options.scaffold;
  if (!options.checkpoint_dir.empty() && scaffold_options.saver == nullptr) {
    DF_ASSIGN_OR_RETURN(scaffold_options.saver, Saver::Create(scope));
  }
  DF_ASSIGN_OR_RETURN(std::unique_ptr<Scaffold> scaffold,
                      Scaffold::Create(scope, scaffold_options));
  return std::unique_ptr<RecoverableSession>(
      new RecoverableSession(scope, options, std::move(scaffold)));
}

RecoverableSession::RecoverableSession(
    const Scope& scope, const MonitoredTrainingSession::Options& options,
    std::unique_ptr<Scaffold> scaffold)
    : scope_(scope), options_(options), scaffold_(std::move(scaffold)) {}

RecoverableSession::~RecoverableSession() {
  absl::Status s = Close();
  if (!s.ok()) DF_LOG(Warning) << "Closing the recoverable session: " << s;
}

absl::Status RecoverableSession::RunStep(
    const std::function<absl::Status(ClientSession*)>& step) {
  const absl::Duration max_wait = absl::Seconds(options_.max_wait_secs);
  const SteadyTime start = SteadyNow();
  for (;;) {
    if (session_ == nullptr) {
      ReadySessionOptions ready;
      ready.session_options = options_.session_options;
      ready.session_options.target = options_.master;
      ready.is_chief = options_.is_chief;
      ready.checkpoint_dir = options_.checkpoint_dir;
      // What is left of this step's patience: a step gives up after
      // max_wait, however its time was spent.
      ready.max_wait =
          std::max(max_wait - SteadySince(start), absl::Milliseconds(1));
      DF_ASSIGN_OR_RETURN(session_,
                          CreateReadySession(scope_, *scaffold_, ready));
    }
    absl::Status s = step(session_.get());
    if (s.ok()) return s;
    if (!IsRecoverable(s) && !ModelWasLost(s, session_.get(), *scaffold_)) {
      return s;
    }
    const absl::Duration waited = SteadySince(start);
    if (waited > max_wait) {
      return AddErrorContext(
          s, absl::StrCat("RecoverableSession gave up after ",
                          absl::FormatDuration(waited), " (max_wait_secs)"));
    }
    DF_LOG(Warning) << "Recovering the session beside the monitored one from: "
                    << s << "; creating it again";
    // Its master may have gone with its task: closing may fail, and that
    // changes nothing.
    (void)session_->Close();
    session_.reset();
    ++num_recoveries_;
  }
}

absl::StatusOr<std::vector<Tensor>> RecoverableSession::Run(
    const std::vector<Output>& fetches) {
  return Run({}, fetches, {});
}

absl::StatusOr<std::vector<Tensor>> RecoverableSession::Run(
    const ClientSession::FeedDict& feeds, const std::vector<Output>& fetches,
    const std::vector<Operation>& targets) {
  std::vector<Tensor> out;
  DF_RETURN_IF_ERROR(RunStep([&](ClientSession* session) -> absl::Status {
    DF_ASSIGN_OR_RETURN(out, session->Run(feeds, fetches, targets));
    return absl::OkStatus();
  }));
  return out;
}

absl::Status RecoverableSession::Close() {
  if (session_ == nullptr) return absl::OkStatus();
  absl::Status s = session_->Close();
  session_.reset();
  return s;
}

}  // namespace train
}  // namespace distflow
