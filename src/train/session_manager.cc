#include "train/session_manager.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/clock.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "distflow/train/saver.h"

namespace distflow {
namespace train {
namespace {

// A list of names, cut short so that a model of thousands of variables still
// gives a readable line.
std::string NameList(const std::vector<std::string>& names) {
  constexpr size_t kShown = 10;
  std::vector<std::string> shown(
      names.begin(), names.begin() + std::min(names.size(), kShown));
  std::string list = absl::StrJoin(shown, ", ");
  if (names.size() > kShown) {
    absl::StrAppend(&list, " and ", names.size() - kShown, " more");
  }
  return list;
}

std::string NotReadyMessage(const std::vector<std::string>& names) {
  return absl::StrCat(names.size(),
                      names.size() == 1 ? " variable is" : " variables are",
                      " not initialized (", NameList(names), ")");
}

// Paces and bounds one wait: logs what is awaited at once and then every
// log_interval, and gives up after max_wait.
class Patience {
 public:
  explicit Patience(const ReadySessionOptions& options)
      : options_(options), start_(SteadyNow()) {}

  // Sleeps one poll interval, logging `what` if it is time to; once max_wait
  // has passed, DEADLINE_EXCEEDED naming `what` instead.
  absl::Status WaitFor(const std::string& what) {
    const absl::Duration waited = SteadySince(start_);
    if (waited + options_.poll_interval > options_.max_wait) {
      return absl::DeadlineExceededError(absl::StrCat(
          "gave up after ", absl::FormatDuration(waited),
          " (max_wait_secs) waiting for ", what,
          options_.is_chief
              ? ""
              : "; check that the chief (is_chief) is running and reaches "
                "every ps task"));
    }
    if (waited >= next_log_) {
      DF_LOG(Info) << (options_.is_chief ? "Chief" : "Worker")
                   << " waiting for " << what
                   << absl::StrFormat(
                          " (%.0f s so far, giving up after %.0f s)",
                          absl::ToDoubleSeconds(waited),
                          absl::ToDoubleSeconds(options_.max_wait));
      next_log_ = waited + options_.log_interval;
    }
    absl::SleepFor(options_.poll_interval);
    return absl::OkStatus();
  }

 private:
  const ReadySessionOptions& options_;
  const SteadyTime start_;
  absl::Duration next_log_ = absl::ZeroDuration();
};

std::string Unreachable(const absl::Status& status) {
  return absl::StrCat("a task to answer: ", status.message());
}

// A session connected to the master, waiting while it is unreachable.
absl::StatusOr<std::unique_ptr<ClientSession>> Connect(
    const Scope& scope, const ReadySessionOptions& options,
    Patience* patience) {
  for (;;) {
    auto session = ClientSession::Create(scope, options.session_options);
    if (session.ok() || !IsRecoverable(session.status())) return session;
    DF_RETURN_IF_ERROR(patience->WaitFor(Unreachable(session.status())));
  }
}

// The chief's step. A model that is ready (every variable has a value: only
// the chief restarted, the ps tasks kept the training done so far) is kept:
// restoring or initializing it would roll it back. Otherwise the latest
// checkpoint is restored, else the init op runs.
absl::Status RestoreOrInitialize(ClientSession* session,
                                 const Scaffold& scaffold,
                                 const ReadySessionOptions& options) {
  DF_ASSIGN_OR_RETURN(std::vector<std::string> missing,
                      NotReady(session, scaffold.ready_op()));
  if (missing.empty()) {
    DF_LOG(Info) << "Chief found the model ready (every variable has a "
                    "value); keeping it";
    return absl::OkStatus();
  }
  if (!options.checkpoint_dir.empty() && scaffold.saver() != nullptr) {
    auto restored =
        scaffold.saver()->RestoreLatest(session, options.checkpoint_dir);
    if (restored.ok()) {
      DF_LOG(Info) << "Chief restored checkpoint " << restored->prefix
                   << " (global step " << restored->global_step << ")";
      DF_ASSIGN_OR_RETURN(missing, NotReady(session, scaffold.ready_op()));
      if (missing.empty()) return absl::OkStatus();
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint ", restored->prefix, " was restored but ",
          NotReadyMessage(missing),
          ": the checkpoint does not hold them; use another checkpoint_dir "
          "or a Saver over the variables it holds"));
    }
    if (!absl::IsNotFound(restored.status())) return restored.status();
  }
  DF_LOG(Info) << "Chief initializing the model: " << NotReadyMessage(missing);
  DF_RETURN_IF_ERROR(session->RunTargets({scaffold.init_op()}));
  DF_ASSIGN_OR_RETURN(missing, NotReady(session, scaffold.ready_op()));
  if (!missing.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the init op '", scaffold.init_op().name(), "' ran but ",
        NotReadyMessage(missing),
        ": give them initial values, or pass an init op that initializes "
        "them in Scaffold::Options"));
  }
  return absl::OkStatus();
}

absl::Status RunLocalInit(ClientSession* session, const Scaffold& scaffold) {
  if (!scaffold.local_init_op().valid()) return absl::OkStatus();
  return session->RunTargets({scaffold.local_init_op()});
}

}  // namespace

bool IsRecoverable(const absl::Status& status) {
  // A task that shuts down cancels the steps it is running: nobody else
  // cancels a monitored session's steps, so CANCELLED means the same.
  return absl::IsUnavailable(status) || absl::IsAborted(status) ||
         absl::IsCancelled(status);
}

bool ModelWasLost(const absl::Status& failed, ClientSession* session,
                  const Scaffold& scaffold) {
  if (!absl::IsFailedPrecondition(failed)) return false;
  auto missing = NotReady(session, scaffold.ready_op());
  return !missing.ok() || !missing->empty();
}

absl::StatusOr<std::vector<std::string>> NotReady(ClientSession* session,
                                                  const Output& ready_op) {
  DF_ASSIGN_OR_RETURN(std::vector<Tensor> out, session->Run({ready_op}));
  std::vector<std::string> names;
  for (const std::string& name : out[0].flat<std::string>()) {
    names.push_back(name);
  }
  return names;
}

absl::StatusOr<std::unique_ptr<ClientSession>> CreateReadySession(
    const Scope& scope, const Scaffold& scaffold,
    const ReadySessionOptions& options) {
  Patience patience(options);
  DF_ASSIGN_OR_RETURN(std::unique_ptr<ClientSession> session,
                      Connect(scope, options, &patience));
  for (;;) {
    absl::Status s;
    std::string awaited;
    if (options.is_chief) {
      s = RestoreOrInitialize(session.get(), scaffold, options);
    } else {
      auto missing = NotReady(session.get(), scaffold.ready_op());
      s = missing.status();
      if (s.ok() && !missing->empty()) {
        awaited = absl::StrCat("the chief to initialize or restore the model: ",
                               NotReadyMessage(*missing));
      }
    }
    if (s.ok() && awaited.empty()) {
      s = RunLocalInit(session.get(), scaffold);
      if (s.ok()) return session;
    }
    if (!s.ok()) {
      if (!IsRecoverable(s)) return s;
      awaited = Unreachable(s);
    }
    DF_RETURN_IF_ERROR(patience.WaitFor(awaited));
    if (absl::IsAborted(s)) {
      // A task restarted. If it was the master's, this session died with it
      // and asking again would fail forever: start afresh (a new session
      // costs little, whichever task it was).
      (void)session->Close();
      DF_ASSIGN_OR_RETURN(session, Connect(scope, options, &patience));
    }
  }
}

}  // namespace train
}  // namespace distflow
