// Hooks: code that runs around every step of a MonitoredTrainingSession, such
// as stopping at a step, logging, saving checkpoints or writing summaries.
//
// A hook sees the session's life in this order:
//   Begin(scope)                 once, before the session exists: may add ops
//   AfterCreateSession(session)  once the model is ready (initialized or
//                                restored), and again after every re-creation
//                                that follows a task failure
//   BeforeRun(context)           before each step: may ask for more fetches,
//                                targets or feeds, which run in the same step
//   AfterRun(context, values)    after each step, with the values it asked for
//   End(session)                 in the step that asks to stop, and at Close
//                                if steps ran after that one (none after
//                                a failed step): must be safe to repeat
//   BeforeCloseSession(session)  before the session of AfterCreateSession is
//                                closed and destroyed: when a task failure
//                                makes the monitored session create it again,
//                                and at Close, whatever happened before
// Every method may fail; the monitored session then reports that error.
#ifndef DISTFLOW_TRAIN_SESSION_RUN_HOOK_H_
#define DISTFLOW_TRAIN_SESSION_RUN_HOOK_H_

#include <vector>

#include "absl/status/status.h"
#include "distflow/scope.h"
#include "distflow/session.h"
#include "distflow/tensor.h"

namespace distflow {
namespace train {

// What a hook adds to the coming step.
struct SessionRunArgs {
  std::vector<Output> fetches;
  std::vector<Operation> targets;
  ClientSession::FeedDict feeds;
};

// The values of a hook's SessionRunArgs::fetches, in the same order.
struct SessionRunValues {
  std::vector<Tensor> results;
};

// The step a hook is called around. Not thread-safe; valid only during the
// call.
class SessionRunContext {
 public:
  SessionRunContext(const std::vector<Output>* fetches,
                    const std::vector<Operation>* targets,
                    ClientSession* session)
      : fetches_(fetches), targets_(targets), session_(session) {}

  // What the caller of Run asked for.
  const std::vector<Output>& original_fetches() const { return *fetches_; }
  const std::vector<Operation>& original_targets() const { return *targets_; }
  // The session under the monitored session (for hooks that must run ops of
  // their own, such as a saver).
  ClientSession* session() const { return session_; }

  // Asks the monitored session to stop after this step: ShouldStop() becomes
  // true.
  void RequestStop() { stop_requested_ = true; }
  bool stop_requested() const { return stop_requested_; }

 private:
  const std::vector<Output>* fetches_;
  const std::vector<Operation>* targets_;
  ClientSession* session_;
  bool stop_requested_ = false;
};

class SessionRunHook {
 public:
  virtual ~SessionRunHook() = default;

  // Called once before the session is created; the only time a hook may add
  // ops to the graph.
  virtual absl::Status Begin(const Scope& scope) { return absl::OkStatus(); }
  // Called when the model is ready: after the first creation and after each
  // re-creation of the underlying session.
  virtual absl::Status AfterCreateSession(ClientSession* session) {
    return absl::OkStatus();
  }
  virtual SessionRunArgs BeforeRun(SessionRunContext* context) { return {}; }
  virtual absl::Status AfterRun(SessionRunContext* context,
                                const SessionRunValues& values) {
    return absl::OkStatus();
  }
  // Called once when the monitored session is closed after training ended
  // normally (not after an error).
  virtual absl::Status End(ClientSession* session) { return absl::OkStatus(); }
  // The last call with `session`: a hook that keeps it (a thread running
  // steps on it) stops using it here. The session's tasks may be gone, so
  // steps run here may fail; they must not wait past their deadlines.
  virtual void BeforeCloseSession(ClientSession* session) {}
};

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_SESSION_RUN_HOOK_H_
