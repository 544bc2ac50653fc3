// MonitoredTrainingSession: a session that does what every training job needs
// around its steps.
//
//   train::MonitoredTrainingSession::Options options;
//   options.master = server->target();
//   options.is_chief = task.task_index == 0;
//   options.checkpoint_dir = "/tmp/model";
//   options.hooks.push_back(train::StopAtStepHook::Create(/*last_step=*/200));
//   auto session = train::MonitoredTrainingSession::Create(root, options);
//   while (!(*session)->ShouldStop()) (*session)->RunTargets({train_op});
//
// Creation. When the ready op reports every variable initialized (only the
// chief restarted; the ps tasks kept the model) the chief keeps the model as
// it is. Otherwise it restores the latest checkpoint of checkpoint_dir or,
// when there is none, runs the scaffold's init op. Every other worker waits
// until the ready op reports nothing missing, logging every few seconds what
// it waits for: the variables still uninitialized, or the task it cannot
// reach. Both then run the local init op. Nobody waits forever: after
// max_wait_secs creation fails with DEADLINE_EXCEEDED naming what was missing.
//
// Recovery. A step that fails with UNAVAILABLE, ABORTED or CANCELLED (a task
// died, restarted and lost its state, or shut down during the step; the
// master's own task restarting, which loses the session itself), or with
// FAILED_PRECONDITION while the ready op reports variables uninitialized (a
// step new to the session reached a ps task that restarted), closes
// the session, creates it again as above (so the chief restores the latest
// checkpoint and the others wait for it), calls every hook's
// AfterCreateSession and runs the step again. Any other error goes to the
// caller. Recovery gives up, returning the error, when no step has succeeded
// for max_wait_secs.
//
// The end. Training ends normally when a hook asks to stop. The step in
// which it asks also calls every hook's End (on the chief: the final
// checkpoint), so a ps task that restarted after the last checkpoint fails
// that step, and recovery restores the checkpoint and training goes on to
// its last step again; ShouldStop() turns true once End has succeeded. The
// chief's Close then calls on_training_end, which tells the ps tasks the
// job is done. Training also ends when a ps task refuses the step
// with OUT_OF_RANGE because the chief has ended the job (EndJob in
// server.h): Run then returns that OUT_OF_RANGE, ShouldStop() turns true and
// Close() succeeds. A worker's loop treats OUT_OF_RANGE as the end, not as an
// error. A worker created after the job ended gets a session whose
// ShouldStop() is true from the start.
//
// Hooks (see hooks.h) run around every step. The chief also gets the usual
// ones, made from the options as TensorFlow makes them: a step counter, a
// checkpoint saver and a summary saver.
#ifndef DISTFLOW_TRAIN_MONITORED_SESSION_H_
#define DISTFLOW_TRAIN_MONITORED_SESSION_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "distflow/scope.h"
#include "distflow/session.h"
#include "distflow/tensor.h"
#include "distflow/train/session_run_hook.h"

namespace distflow {
namespace train {

class Saver;

// The ops that make a model ready, made once, before the session exists. Any
// op left out of Options gets the default named below.
class Scaffold {
 public:
  struct Options {
    // Gives every variable its first value when there is no checkpoint.
    // Default: ops::GlobalVariablesInitializer over every global variable.
    Operation init_op;
    // A string vector naming what is not ready yet; empty once the model is
    // ready. Default: ops::ReportUninitializedVariables over every global
    // variable (their checks run on the ps tasks that hold them).
    Output ready_op;
    // Run by every worker once the model is ready, after each creation of
    // the session. Default: none.
    Operation local_init_op;
    // Restores and saves checkpoints. Default: a Saver over every global
    // variable when the session has a checkpoint_dir, else none.
    std::shared_ptr<Saver> saver;
  };

  // Makes the missing ops in `scope` (with no control dependencies). Fails
  // with the scope's error if the graph did not build, or if the ready op is
  // not a string vector.
  static absl::StatusOr<std::unique_ptr<Scaffold>> Create(
      const Scope& scope, const Options& options = {});

  const Operation& init_op() const { return options_.init_op; }
  const Output& ready_op() const { return options_.ready_op; }
  // Invalid when there is none.
  const Operation& local_init_op() const { return options_.local_init_op; }
  // Null when there is none.
  Saver* saver() const { return options_.saver.get(); }
  const std::shared_ptr<Saver>& shared_saver() const { return options_.saver; }

 private:
  explicit Scaffold(Options options) : options_(std::move(options)) {}
  Options options_;
};

// Not thread-safe: run steps from one thread.
class MonitoredTrainingSession {
 public:
  struct Options {
    // The session target: "" runs in this process, "grpc://host:port" (such
    // as Server::target()) on the cluster.
    std::string master;
    // The chief initializes or restores the model, saves checkpoints and
    // writes summaries; the other workers wait for it.
    bool is_chief = true;
    // Where the chief restores from and saves checkpoints; "" for none.
    std::string checkpoint_dir;
    // Where the chief writes summaries; "" means checkpoint_dir.
    std::string summary_dir;
    // The ops that make the model ready; left-out ones get defaults.
    Scaffold::Options scaffold;
    // Run around every step, in this order, on every worker.
    std::vector<std::shared_ptr<SessionRunHook>> hooks;
    // Run on the chief only, after `hooks`.
    std::vector<std::shared_ptr<SessionRunHook>> chief_only_hooks;
    // The chief's checkpoints (given checkpoint_dir): every
    // save_checkpoint_steps global steps when positive, else every
    // save_checkpoint_secs seconds when positive, else never; and at the
    // end (in the step that asks to stop).
    double save_checkpoint_secs = 600;
    int64_t save_checkpoint_steps = 0;
    // The chief's summaries (given a summary directory): every
    // save_summaries_steps global steps when positive, else every
    // save_summaries_secs seconds when positive, else never.
    int64_t save_summaries_steps = 100;
    double save_summaries_secs = 0;
    // The chief logs global steps/sec every this many global steps (and
    // writes it as a summary); 0 turns it off.
    int64_t log_step_count_steps = 100;
    // How long creation may wait for the model to be ready or a task to
    // answer, and how long recovery may go without a successful step.
    double max_wait_secs = 7200;
    // Called by the chief's Close after a normal end (a hook asked to stop,
    // no step failed), after the hooks' End: the place to tell the ps tasks
    // that the job is done, as in
    //   options.on_training_end = [&] { return EndJob(task.cluster); };
    // Its error is Close's. Empty: nothing.
    std::function<absl::Status()> on_training_end;
    // Threads of the session (its target is `master`).
    SessionOptions session_options;
  };

  // Creates the hooks' ops (SessionRunHook::Begin), the scaffold, and the
  // session, ready to run steps (see the top of this file). Errors: the
  // scope's or a hook's error, INVALID_ARGUMENT for a bad option (named),
  // DEADLINE_EXCEEDED when the model was not ready within max_wait_secs.
  static absl::StatusOr<std::unique_ptr<MonitoredTrainingSession>> Create(
      const Scope& scope, const Options& options);

  // Closes the session (see Close) if the caller did not.
  ~MonitoredTrainingSession();

  // Runs one step with the hooks around it, recovering from task failures
  // (see the top of this file). Returns the values of `fetches`.
  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<Output>& fetches);
  absl::StatusOr<std::vector<Tensor>> Run(
      const ClientSession::FeedDict& feeds, const std::vector<Output>& fetches,
      const std::vector<Operation>& targets = {});
  absl::Status RunTargets(const std::vector<Operation>& targets);

  // True once a hook asked to stop (such as StopAtStepHook at its last step),
  // after a step failed with an error that recovery does not handle, or after
  // Close.
  bool ShouldStop() const { return stop_ || ended_ || failed_ || closed_; }

  // Calls every hook's End (unless a step failed, or End ran in the step
  // that asked to stop and no step ran since), then closes the session.
  // Returns the first error. Later calls do nothing.
  absl::Status Close();

  // How many times the session was created again after a task failure.
  int num_recoveries() const { return num_recoveries_; }

 private:
  MonitoredTrainingSession(const Scope& scope, const Options& options,
                           std::unique_ptr<Scaffold> scaffold,
                           std::vector<std::shared_ptr<SessionRunHook>> hooks);
  // Creates the session (waiting until the model is ready) and calls every
  // hook's AfterCreateSession.
  absl::Status CreateSession();
  // One step with the hooks around it, on the current session.
  // Sets *stop_requested when a hook asked to stop.
  absl::StatusOr<std::vector<Tensor>> RunHooked(
      const ClientSession::FeedDict& feeds, const std::vector<Output>& fetches,
      const std::vector<Operation>& targets, bool* stop_requested);
  // Calls every hook's End, as the step that ends training does.
  absl::Status EndHooks();
  // Tells every hook the session goes (BeforeCloseSession), then closes and
  // destroys it. Returns the session's Close status.
  absl::Status CloseSession();

  Scope scope_;
  Options options_;
  std::unique_ptr<Scaffold> scaffold_;
  // Every hook, in the order they run: the user's, then the chief's.
  std::vector<std::shared_ptr<SessionRunHook>> hooks_;
  std::unique_ptr<ClientSession> session_;
  // When a step last succeeded (or the session was created).
  std::chrono::steady_clock::time_point last_progress_;
  bool stop_ = false;
  bool failed_ = false;
  // A ps task refused a step because the chief ended the job.
  bool ended_ = false;
  bool closed_ = false;
  int num_recoveries_ = 0;
  // Steps that succeeded, and their count when the hooks' End last ran
  // (-1: never).
  int64_t steps_ = 0;
  int64_t hooks_ended_after_ = -1;
};

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_MONITORED_SESSION_H_
