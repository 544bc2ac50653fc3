// RecoverableSession: a session for a training program's own steps beside
// its MonitoredTrainingSession (evaluating on a test set, reading the global
// step, polling a flag on the ps tasks), which survives a task restart as the
// monitored session does.
//
//   auto side = train::RecoverableSession::Create(root, options).value();
//   auto session = train::MonitoredTrainingSession::Create(root, options);
//   ...
//   auto step = side->Run({global_step});
//
// A plain ClientSession does not: once a ps task has restarted, its steps
// fail for good (ABORTED: the partitions it registered died with the task's
// old incarnation; or FAILED_PRECONDITION for a step it never ran before,
// registered afresh on the restarted task, whose variables have no value),
// and while the task is down they fail with UNAVAILABLE.
// A RecoverableSession then closes its session, creates a new one as the
// monitored session creates its own (the chief restores the latest
// checkpoint or initializes the model, the other workers wait until the
// model is ready) and runs the step again. Its steps run no hooks and count
// as no training step.
#ifndef DISTFLOW_TRAIN_RECOVERABLE_SESSION_H_
#define DISTFLOW_TRAIN_RECOVERABLE_SESSION_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distflow/scope.h"
#include "distflow/session.h"
#include "distflow/tensor.h"
#include "distflow/train/monitored_session.h"

namespace distflow {
namespace train {

// Not thread-safe: run steps from one thread.
class RecoverableSession {
 public:
  // Uses the monitored session's options: master, is_chief, checkpoint_dir,
  // scaffold, max_wait_secs and session_options (the hooks are ignored).
  // Scaffold ops left out of options.scaffold are made again in `scope`, so
  // give both sessions the same ops (the ready op, and the saver when there
  // is a checkpoint_dir) to keep one copy of each in the graph. The session
  // itself is created by the first step. Errors: the scope's,
  // INVALID_ARGUMENT for a max_wait_secs that is not positive.
  static absl::StatusOr<std::unique_ptr<RecoverableSession>> Create(
      const Scope& scope, const MonitoredTrainingSession::Options& options);
  ~RecoverableSession();

  // Runs `step` on a session whose model is ready. When `step` fails with
  // UNAVAILABLE, ABORTED or CANCELLED (a task is down, restarted or shutting
  // down), or with FAILED_PRECONDITION while the ready op finds variables
  // uninitialized (a task restarted and lost them: a step first run after
  // the restart gets this instead of ABORTED), creates the session again and
  // runs `step` again from its start:
  // `step` must be safe to repeat (reads are). Gives up after max_wait_secs
  // of recovering, with DEADLINE_EXCEEDED naming what it waited for (the
  // task that did not answer, the variables not initialized). Other errors
  // return at once.
  absl::Status RunStep(const std::function<absl::Status(ClientSession*)>& step);

  // One step of RunStep: the values of `fetches`.
  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<Output>& fetches);
  absl::StatusOr<std::vector<Tensor>> Run(
      const ClientSession::FeedDict& feeds, const std::vector<Output>& fetches,
      const std::vector<Operation>& targets);

  // Closes the current session, if any. Steps may follow: the next creates a
  // session again.
  absl::Status Close();

  // How many times a step failed and the session was created again.
  int num_recoveries() const { return num_recoveries_; }

 private:
  RecoverableSession(const Scope& scope,
                     const MonitoredTrainingSession::Options& options,
                     std::unique_ptr<Scaffold> scaffold);

  const Scope scope_;
  const MonitoredTrainingSession::Options options_;
  const std::unique_ptr<Scaffold> scaffold_;
  std::unique_ptr<ClientSession> session_;
  int num_recoveries_ = 0;
};

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_RECOVERABLE_SESSION_H_
