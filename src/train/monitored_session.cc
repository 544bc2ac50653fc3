// The monitored session's life: creation with the hooks, steps with the hooks
// around them, recovery from task failures, and closing.
#include "distflow/train/monitored_session.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/clock.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "distflow/train/saver.h"
#include "train/session_manager.h"
#include "train/standard_hooks.h"

namespace distflow {
namespace train {
namespace {

absl::Status ValidateOptions(const MonitoredTrainingSession::Options& o) {
  auto bad = [](const std::string& what) {
    return absl::InvalidArgumentError(
        absl::StrCat("MonitoredTrainingSession::Options: ", what));
  };
  if (!(o.max_wait_secs > 0)) {
    return bad(absl::StrCat("max_wait_secs must be positive (got ",
                            o.max_wait_secs, ")"));
  }
  if (o.save_checkpoint_secs < 0 || o.save_checkpoint_steps < 0 ||
      o.save_summaries_secs < 0 || o.save_summaries_steps < 0 ||
      o.log_step_count_steps < 0) {
    return bad(
        "save_checkpoint_secs/_steps, save_summaries_secs/_steps and "
        "log_step_count_steps must not be negative (0 turns them off)");
  }
  return absl::OkStatus();
}

absl::Status BeginAll(const Scope& scope,
                      const std::vector<std::shared_ptr<SessionRunHook>>& hooks,
                      const char* which) {
  for (size_t i = 0; i < hooks.size(); ++i) {
    if (hooks[i] == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "MonitoredTrainingSession::Options: ", which, "[", i, "] is null"));
    }
    DF_RETURN_IF_ERROR(hooks[i]->Begin(scope));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<MonitoredTrainingSession>>
MonitoredTrainingSession::Create(const Scope& scope, const Options& options) {
  DF_RETURN_IF_ERROR(scope.status());
  DF_RETURN_IF_ERROR(ValidateOptions(options));
  std::vector<std::shared_ptr<SessionRunHook>> hooks = options.hooks;
  DF_RETURN_IF_ERROR(BeginAll(scope, options.hooks, "hooks"));
  if (options.is_chief) {
    DF_RETURN_IF_ERROR(
        BeginAll(scope, options.chief_only_hooks, "chief_only_hooks"));
    hooks.insert(hooks.end(), options.chief_only_hooks.begin(),
                 options.chief_only_hooks.end());
  }
  // The scaffold comes after the hooks' ops (its initializer and ready op
  // must cover any variable a hook made), and the standard hooks after the
  // scaffold (they use its saver).
  Scaffold::Options scaffold_options = options.scaffold;
  if (!options.checkpoint_dir.empty() && scaffold_options.saver == nullptr) {
    DF_ASSIGN_OR_RETURN(scaffold_options.saver, Saver::Create(scope));
  }
  DF_ASSIGN_OR_RETURN(std::unique_ptr<Scaffold> scaffold,
                      Scaffold::Create(scope, scaffold_options));
  if (options.is_chief) {
    DF_ASSIGN_OR_RETURN(auto standard,
                        StandardChiefHooks(scope, options, *scaffold));
    DF_RETURN_IF_ERROR(BeginAll(scope, standard, "standard hooks"));
    hooks.insert(hooks.end(), standard.begin(), standard.end());
  }
  DF_RETURN_IF_ERROR(scope.status());
  std::unique_ptr<MonitoredTrainingSession> session(
      new MonitoredTrainingSession(scope, options, std::move(scaffold),
                                   std::move(hooks)));
  absl::Status created = session->CreateSession();
  if (absl::IsOutOfRange(created)) {
    // A worker that starts (or restarts) after the chief ended the job: a ps
    // task refused its session. Training is over for it too, not failed.
    DF_LOG(Info) << "Training has ended: " << created.message();
    session->ended_ = true;
    return session;
  }
  DF_RETURN_IF_ERROR(created);
  return session;
}

MonitoredTrainingSession::MonitoredTrainingSession(
    const Scope& scope, const Options& options,
    std::unique_ptr<Scaffold> scaffold,
    std::vector<std::shared_ptr<SessionRunHook>> hooks)
    : scope_(scope),
      options_(options),
      scaffold_(std::move(scaffold)),
      hooks_(std::move(hooks)) {}

MonitoredTrainingSession::~MonitoredTrainingSession() {
  absl::Status s = Close();
  if (!s.ok()) DF_LOG(Warning) << "Closing the monitored session: " << s;
}

absl::Status MonitoredTrainingSession::CreateSession() {
  ReadySessionOptions ready;
  ready.session_options = options_.session_options;
  ready.session_options.target = options_.master;
  ready.is_chief = options_.is_chief;
  ready.checkpoint_dir = options_.checkpoint_dir;
  ready.max_wait = absl::Seconds(options_.max_wait_secs);
  DF_ASSIGN_OR_RETURN(session_, CreateReadySession(scope_, *scaffold_, ready));
  for (const auto& hook : hooks_) {
    DF_RETURN_IF_ERROR(hook->AfterCreateSession(session_.get()));
  }
  last_progress_ = SteadyNow();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> MonitoredTrainingSession::Run(
    const std::vector<Output>& fetches) {
  return Run({}, fetches, {});
}

absl::Status MonitoredTrainingSession::RunTargets(
    const std::vector<Operation>& targets) {
  return Run({}, {}, targets).status();
}

absl::StatusOr<std::vector<Tensor>> MonitoredTrainingSession::Run(
    const ClientSession::FeedDict& feeds, const std::vector<Output>& fetches,
    const std::vector<Operation>& targets) {
  if (closed_) {
    return absl::FailedPreconditionError(
        "Run on a closed MonitoredTrainingSession");
  }
  for (;;) {
    absl::Status s;
    if (session_ == nullptr) s = CreateSession();
    if (s.ok()) {
      bool stop_requested = false;
      auto out = RunHooked(feeds, fetches, targets, &stop_requested);
      // The step that ends training also runs the hooks' End (the chief's
      // final checkpoint): a task that restarted since the last checkpoint
      // then fails this step, which recovery handles like any other, and
      // training goes on from the restored checkpoint to its end again.
      if (out.ok() && stop_requested) s = EndHooks();
      if (out.ok() && s.ok()) {
        last_progress_ = SteadyNow();
        if (stop_requested) stop_ = true;
        return out;
      }
      if (!out.ok()) s = out.status();
    }
    if (absl::IsOutOfRange(s)) {
      // The chief ended the job (EndJob) and a ps task refused this step:
      // training is over, for this worker too.
      DF_LOG(Info) << "Training has ended: " << s.message();
      ended_ = true;
      return s;
    }
    if (!IsRecoverable(s) &&
        !(session_ != nullptr && ModelWasLost(s, session_.get(), *scaffold_))) {
      failed_ = true;
      return s;
    }
    const absl::Duration stalled = SteadySince(last_progress_);
    if (stalled > absl::Seconds(options_.max_wait_secs)) {
      failed_ = true;
      return AddErrorContext(
          s, absl::StrCat("gave up recovering: no step succeeded for ",
                          absl::FormatDuration(stalled), " (max_wait_secs)"));
    }
    DF_LOG(Warning) << "Recovering the monitored session from: " << s
                    << "; creating it again";
    if (session_ != nullptr) {
      // The old session's master may be gone with its task: its close may
      // fail, and that changes nothing.
      (void)CloseSession();
    }
    ++num_recoveries_;
  }
}

absl::StatusOr<std::vector<Tensor>> MonitoredTrainingSession::RunHooked(
    const ClientSession::FeedDict& feeds, const std::vector<Output>& fetches,
    const std::vector<Operation>& targets, bool* stop_requested) {
  SessionRunContext context(&fetches, &targets, session_.get());
  ClientSession::FeedDict all_feeds = feeds;
  std::vector<Output> all_fetches = fetches;
  std::vector<Operation> all_targets = targets;
  // Where each hook's fetches start in all_fetches.
  std::vector<size_t> firsts;
  for (const auto& hook : hooks_) {
    SessionRunArgs args = hook->BeforeRun(&context);
    firsts.push_back(all_fetches.size());
    all_fetches.insert(all_fetches.end(), args.fetches.begin(),
                       args.fetches.end());
    all_targets.insert(all_targets.end(), args.targets.begin(),
                       args.targets.end());
    for (auto& feed : args.feeds) {
      for (const auto& existing : all_feeds) {
        if (existing.first == feed.first) {
          return absl::InvalidArgumentError(
              absl::StrCat("a hook feeds '", feed.first.name(),
                           "', which this step feeds already"));
        }
      }
      all_feeds.push_back(std::move(feed));
    }
  }
  DF_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                      session_->Run(all_feeds, all_fetches, all_targets));
  for (size_t i = 0; i < hooks_.size(); ++i) {
    const size_t end = i + 1 < hooks_.size() ? firsts[i + 1] : out.size();
    SessionRunValues values{
        std::vector<Tensor>(out.begin() + firsts[i], out.begin() + end)};
    DF_RETURN_IF_ERROR(hooks_[i]->AfterRun(&context, values));
  }
  *stop_requested = context.stop_requested();
  ++steps_;
  out.resize(fetches.size());
  return out;
}

absl::Status MonitoredTrainingSession::EndHooks() {
  for (const auto& hook : hooks_) DF_RETURN_IF_ERROR(hook->End(session_.get()));
  hooks_ended_after_ = steps_;
  return absl::OkStatus();
}

absl::Status MonitoredTrainingSession::CloseSession() {
  for (auto hook = hooks_.rbegin(); hook != hooks_.rend(); ++hook) {
    (*hook)->BeforeCloseSession(session_.get());
  }
  absl::Status closed = session_->Close();
  session_.reset();
  return closed;
}

absl::Status MonitoredTrainingSession::Close() {
  if (closed_) return absl::OkStatus();
  closed_ = true;
  absl::Status first;
  if (session_ == nullptr) return first;
  if (ended_) {
    // The ps tasks take no more steps, and may be gone already: the hooks'
    // End could not run, and closing the session changes nothing.
    (void)CloseSession();
    return first;
  }
  // After a failed step the model may be in any state: no final checkpoint
  // or final ops then. The step that asked to stop ran End already; it runs
  // again only for steps run after that one.
  if (!failed_ && hooks_ended_after_ != steps_) {
    for (const auto& hook : hooks_) first.Update(hook->End(session_.get()));
  }
  first.Update(CloseSession());
  if (!failed_ && stop_ && options_.is_chief && options_.on_training_end) {
    first.Update(options_.on_training_end());
  }
  return first;
}

}  // namespace train
}  // namespace distflow
