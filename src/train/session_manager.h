// Creating a session whose model is ready to train: the chief initializes or
// restores it, the other workers wait for that. Used by
// MonitoredTrainingSession for its first session and after every failure.
#ifndef DISTFLOW_TRAIN_SESSION_MANAGER_H_
#define DISTFLOW_TRAIN_SESSION_MANAGER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "distflow/scope.h"
#include "distflow/session.h"
#include "distflow/train/monitored_session.h"

namespace distflow {
namespace train {

struct ReadySessionOptions {
  // Its target is the master.
  SessionOptions session_options;
  bool is_chief = true;
  // Where the chief restores from; "" for nowhere.
  std::string checkpoint_dir;
  // Waiting longer than this for the model or a task is DEADLINE_EXCEEDED.
  absl::Duration max_wait = absl::Hours(2);
  // How often the ready op and unreachable tasks are tried again.
  absl::Duration poll_interval = absl::Milliseconds(250);
  // How often a waiting worker logs what it waits for (the first time at
  // once).
  absl::Duration log_interval = absl::Seconds(5);
};

// A session over `scope` whose model is ready: on the chief restored from
// the latest checkpoint of options.checkpoint_dir, or initialized by the init
// op; elsewhere once the ready op reports nothing missing. The local init op
// has run. Errors that a wait can outlast (a task UNAVAILABLE, a step
// ABORTED) are retried and logged until options.max_wait has passed (after
// ABORTED with a new session: the master's own task may have restarted), then
// DEADLINE_EXCEEDED names what was still missing; other errors return at once.
absl::StatusOr<std::unique_ptr<ClientSession>> CreateReadySession(
    const Scope& scope, const Scaffold& scaffold,
    const ReadySessionOptions& options);

// The names the ready op reports: empty when the model is ready.
absl::StatusOr<std::vector<std::string>> NotReady(ClientSession* session,
                                                  const Output& ready_op);

// True for errors after which a new session may succeed: a task that is
// unreachable (UNAVAILABLE), that restarted and lost the step's state
// (ABORTED), or that shut down during the step (CANCELLED).
bool IsRecoverable(const absl::Status& status);

// Whether `failed` (a step's error) means that the model was lost: a task
// that restarted has new, uninitialized variables, and a step whose
// partitions are registered on it afresh (a step the session never ran
// before, such as a checkpoint's save) fails with FAILED_PRECONDITION rather
// than ABORTED. The ready op tells that case from a variable the program
// never initialized.
bool ModelWasLost(const absl::Status& failed, ClientSession* session,
                  const Scaffold& scaffold);

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_SESSION_MANAGER_H_
