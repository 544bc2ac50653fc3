// The session hook of SyncReplicasOptimizer: initializes each worker's local
// step, and on the chief runs the aggregation loop on a thread of its own (as
// TensorFlow's chief queue runner does).
#include <memory>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "distflow/train/sync_replicas_optimizer.h"

namespace distflow {
namespace train {
namespace {

class SyncReplicasHook : public SessionRunHook {
 public:
  SyncReplicasHook(SyncReplicasOptimizer* optimizer, bool is_chief,
                   int num_tokens)
      : optimizer_(optimizer), is_chief_(is_chief), num_tokens_(num_tokens) {}

  // A monitored session stops the loop in BeforeCloseSession; a caller that
  // drives the hook by hand and never closes must keep its session alive
  // until here.
  ~SyncReplicasHook() override { StopLoopIfRunning(); }

  absl::Status Begin(const Scope& scope) override {
    if (!optimizer_->chief_aggregate_op().valid()) {
      return absl::FailedPreconditionError(
          "SyncReplicasOptimizer's hook: build the train op (Minimize or "
          "ApplyGradients) before the session starts");
    }
    if (is_chief_) {
      DF_ASSIGN_OR_RETURN(init_tokens_op_,
                          optimizer_->GetInitTokensOp(num_tokens_));
    }
    return absl::OkStatus();
  }

  absl::Status AfterCreateSession(ClientSession* session) override {
    if (is_chief_ && !init_tokens_op_.valid()) {
      return absl::FailedPreconditionError(
          "SyncReplicasOptimizer's hook: Begin must run before "
          "AfterCreateSession (it builds the initial tokens op)");
    }
    if (loop_.joinable()) {
      return absl::FailedPreconditionError(
          "SyncReplicasOptimizer's hook: AfterCreateSession again before "
          "BeforeCloseSession of the session it was given first");
    }
    DF_RETURN_IF_ERROR(
        AddErrorContext(session->RunTargets({optimizer_->local_step_init_op()}),
                        "initializing the local step from the global step"));
    if (!is_chief_) return absl::OkStatus();
    // Opens the accumulators at the global step before any token lets a
    // worker contribute.
    DF_RETURN_IF_ERROR(AddErrorContext(
        session->RunTargets({optimizer_->chief_init_op(), init_tokens_op_}),
        "setting the accumulators' step and the initial tokens"));
    {
      absl::MutexLock lock(&mu_);
      stop_ = false;
      loop_error_ = absl::OkStatus();
      session_ = session;
    }
    loop_ = std::thread([this, session] { RunLoop(session); });
    return absl::OkStatus();
  }

  absl::Status AfterRun(SessionRunContext* context,
                        const SessionRunValues& values) override {
    absl::MutexLock lock(&mu_);
    // Reported once: a re-created session starts a fresh loop.
    absl::Status error = std::move(loop_error_);
    loop_error_ = absl::OkStatus();
    return error;
  }

  absl::Status End(ClientSession* session) override {
    if (!loop_.joinable()) return absl::OkStatus();
    return StopLoop(/*close_token_queue=*/true);
  }

  // The session goes (a task failed, or training ended): the loop must not
  // run on it any more.
  void BeforeCloseSession(ClientSession* session) override {
    StopLoopIfRunning();
  }

 private:
  // Stops the loop if End has not (the session failed): closes the
  // accumulators so that its waiting step ends, but leaves the token queue
  // open for a chief that takes over.
  void StopLoopIfRunning() {
    if (!loop_.joinable()) return;
    absl::Status s = StopLoop(/*close_token_queue=*/false);
    if (!s.ok()) DF_LOG(Warning) << "stopping the aggregation loop: " << s;
  }

  void RunLoop(ClientSession* session) {
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        if (stop_) return;
      }
      absl::Status s = session->RunTargets({optimizer_->chief_aggregate_op()});
      if (s.ok()) continue;
      absl::MutexLock lock(&mu_);
      if (!stop_) {
        loop_error_ = AddErrorContext(
            s, "the chief's aggregation of the replicas' gradients failed");
        DF_LOG(Error) << loop_error_;
      }
      return;
    }
  }

  // Asks the loop to stop, wakes its waiting step by closing the
  // accumulators (and, at the end of training, the token queue) and joins
  // it.
  absl::Status StopLoop(bool close_token_queue) {
    ClientSession* session;
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
      session = session_;
    }
    std::vector<Operation> closes = {optimizer_->close_accumulators_op()};
    if (close_token_queue) closes.push_back(optimizer_->close_token_queue_op());
    absl::Status s = session->RunTargets(closes);
    // With a task gone, the close may not have reached every accumulator,
    // and the loop's step could wait on a live one: closing the session
    // aborts that step.
    if (!s.ok()) (void)session->Close();
    loop_.join();
    {
      absl::MutexLock lock(&mu_);
      session_ = nullptr;
    }
    return AddErrorContext(s, "closing the accumulators");
  }

  SyncReplicasOptimizer* const optimizer_;
  const bool is_chief_;
  const int num_tokens_;
  Operation init_tokens_op_;
  std::thread loop_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status loop_error_ ABSL_GUARDED_BY(mu_);
  ClientSession* session_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace

std::unique_ptr<SessionRunHook> SyncReplicasOptimizer::MakeSessionRunHook(
    bool is_chief, int num_tokens) {
  return std::make_unique<SyncReplicasHook>(this, is_chief, num_tokens);
}

}  // namespace train
}  // namespace distflow
