// The worker of one task: runs registered graph partitions for steps and
// exchanges their cut tensors with other tasks.
//
// Graphs are registered by masters (one partition per task per signature of a
// session) and run under a step id shared by every partition of the step. A
// step's tensors meet in a per-step rendezvous: values this task produces for
// another task are pushed to that task's worker (WorkerCacheInterface), and
// values pushed to this task wait there for their _Recv. The incarnation, a
// random number chosen at construction, tells a restarted task from the one
// it replaced: a RunGraph that names another incarnation fails with ABORTED
// and must re-register.
#ifndef DISTFLOW_DISTRIBUTED_WORKER_H_
#define DISTFLOW_DISTRIBUTED_WORKER_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "base/thread_pool.h"
#include "distributed/push_budget.h"
#include "distributed/worker_interface.h"
#include "runtime/device.h"
#include "runtime/executor.h"

namespace distflow {

struct WorkerEnv {
  // "/job:ps/replica:0/task:0"
  std::string task_name;
  // Workers of the other tasks, for pushing tensors; not owned, outlives the
  // worker.
  WorkerCacheInterface* worker_cache = nullptr;
  // Threads that run ops (not owned; outlive the worker).
  ThreadPool* inter_op_pool = nullptr;
  ThreadPool* intra_op_pool = nullptr;
  // Called (once per request) by Shutdown with the request's reason and
  // idle grace (see ShutdownRequest); may be empty.
  std::function<void(const std::string& reason, int64_t idle_grace_ms)>
      request_stop;
  // How long tensors pushed for a step wait for a RunGraph of that step
  // here. Past it they are dropped (and logged) and the step refused: their
  // step cannot run here any more (its master's RunGraph calls, started
  // before any partition pushes, have passed their deadline), so they would
  // leak. Infinite keeps them until the step is aborted.
  absl::Duration unclaimed_step_timeout = absl::InfiniteDuration();
  // What tensors pushed by other tasks may hold here before a step takes
  // them (unclaimed ones, and those still arriving in chunks): per peer and
  // in all (see push_budget.h; 0: no limit).
  int64_t max_pending_push_bytes_per_peer = PushBudget::kDefaultPerPeer;
  int64_t max_pending_push_bytes = PushBudget::kDefaultPerTask;
};

class Worker : public WorkerInterface {
 public:
  explicit Worker(WorkerEnv env);
  ~Worker() override;

  void GetStatusAsync(const proto::GetStatusRequest* request,
                      proto::GetStatusResponse* response,
                      StatusCallback done) override;
  void RegisterGraphAsync(const proto::RegisterGraphRequest* request,
                          proto::RegisterGraphResponse* response,
                          StatusCallback done) override;
  void DeregisterGraphAsync(const proto::DeregisterGraphRequest* request,
                            proto::DeregisterGraphResponse* response,
                            StatusCallback done) override;
  void RunGraphAsync(const proto::RunGraphRequest* request,
                     proto::RunGraphResponse* response,
                     StatusCallback done) override;
  void RunGraphWithTensorsAsync(const proto::RunGraphRequest* request,
                                std::vector<Tensor> feeds,
                                std::vector<Tensor>* fetches,
                                StatusCallback done) override;
  void AbortStepAsync(const proto::AbortStepRequest* request,
                      proto::AbortStepResponse* response,
                      StatusCallback done) override;
  void PushTensorAsync(int64_t step_id, const std::string& key, Tensor value,
                       StatusCallback done) override;
  // A tensor pushed by `peer` (as the transport names it): while no RunGraph
  // of its step has come, it counts against the peer's budget
  // (push_budget()), and is refused with RESOURCE_EXHAUSTED naming the peer
  // past it. PushTensorAsync is this for a push from this process.
  void PushTensorFromPeerAsync(int64_t step_id, const std::string& key,
                               Tensor value, const std::string& peer,
                               StatusCallback done);
  // What pushed tensors not yet taken by a step hold, by peer (shared with
  // the transport's chunk assembly).
  PushBudget* push_budget() { return &push_budget_; }
  void ShutdownAsync(const proto::ShutdownRequest* request,
                     proto::ShutdownResponse* response,
                     StatusCallback done) override;

  uint64_t incarnation() const { return incarnation_; }
  const std::string& task_name() const { return env_.task_name; }
  // The task's one device (its variables live here).
  CpuDevice* device() { return &device_; }
  // Aborts every running step with `status` (the server is stopping).
  void AbortAllSteps(const absl::Status& status);
  // From now on new steps fail with OUT_OF_RANGE naming `reason`; steps
  // already running here finish.
  void RefuseNewSteps(const std::string& reason);
  // True when no step is running here and none finished within `period`.
  bool IdleFor(absl::Duration period);
  // Steps that hold tensors pushed here but have had no RunGraph here yet,
  // and the bytes of those tensors (for tests and monitoring).
  int NumUnclaimedSteps();
  // Graphs registered here and not yet deregistered or dropped.
  int NumGraphs();
  // Steps under way here: started by a RunGraph or a pushed tensor, and not
  // yet finished or aborted.
  int NumSteps();
  int64_t UnclaimedPushedBytes();

 private:
  class StepRendezvous;
  struct Step {
    std::shared_ptr<StepRendezvous> rendezvous;
    CancellationManager cancellation;
    // Guarded by mu_. Whether a RunGraph of the step has started here; until
    // then, what was pushed for it (see unclaimed_step_timeout).
    bool claimed = false;
    std::chrono::steady_clock::time_point first_push;
    // Bytes counted against each peer's push budget while unclaimed.
    absl::flat_hash_map<std::string, int64_t> budgeted;
    int64_t pushed_tensors = 0;
    int64_t pushed_bytes = 0;
    absl::flat_hash_set<std::string> senders;
    // The task whose master runs the step, and that master's process (from
    // the RunGraph's registered graph; empty until a RunGraph claims the
    // step, or when unknown).
    std::string master_task;
    std::string master_incarnation;
  };

  // Runs a registered graph for a step; `done` gets the status and the
  // values of the _Retvals by index. With `start_on_caller` the step's cheap
  // first nodes run on this thread (Executor::RunArgs::start_on_caller);
  // otherwise it starts on the inter-op pool unless the graph is small.
  void RunGraphImpl(
      const proto::RunGraphRequest& request, std::vector<Tensor> args,
      bool start_on_caller,
      std::function<void(absl::Status, std::vector<Tensor>)> done);
  // A tensor pushed for a step, as recorded while no RunGraph has claimed
  // the step.
  struct PushedTensor {
    // The task that pushed it (parsed before the lock is taken).
    std::string sender;
    int64_t bytes;
    // The peer that pushed it, as the transport names it ("": this process,
    // counted against no budget).
    std::string peer;
    // Set: whether the step's master runs on the task that pushed it.
    bool from_master = false;
  };
  // The state of `step_id`, made on first use: claimed by a RunGraph of a
  // graph that `master_task` registered (`pushed` null) or holding one more
  // pushed tensor. Null (with the reason in `*status`) if the step has
  // already finished on this task.
  std::shared_ptr<Step> FindOrCreateStep(
      int64_t step_id, PushedTensor* pushed, absl::Status* status,
      const std::string& master_task = std::string(),
      const std::string& master_incarnation = std::string());
  // Drops the steps whose pushed tensors have waited past
  // unclaimed_step_timeout; runs on expiry_thread_ until the worker goes.
  void ExpireUnclaimedSteps();
  // Forgets the step and refuses tensors pushed for it from now on, with
  // `expired_reason` if it is non-empty.
  void FinishStep(int64_t step_id, std::string expired_reason = "");
  void FinishStepLocked(int64_t step_id, std::string expired_reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives back what `step`'s pushed tensors counted against push_budget_.
  void ReleaseBudgetLocked(Step* step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Push(int64_t step_id, const std::string& key, const Tensor& value,
            StatusCallback done);
  // Admits a registration from process `incarnation` of master task
  // `master_task`. Incarnations are compared for equality only: a process
  // other than the one seen last replaces it, and the graphs of the one
  // before are dropped (a restarted chief re-registers; its old process
  // fails with ABORTED if it still runs). Its steps still running here go
  // into `*replaced`, for the caller to abort once the lock is released: a
  // dead chief's step waiting on an accumulator would otherwise take the
  // gradients meant for its replacement. No order is trusted: a clock set
  // back or a made-up incarnation cannot lock a task's newest process out.
  absl::Status AdmitMaster(const std::string& master_task,
                           const std::string& incarnation,
                           std::vector<std::shared_ptr<Step>>* replaced)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const WorkerEnv env_;
  const uint64_t incarnation_;
  PushBudget push_budget_;
  CpuDevice device_;

  absl::Mutex mu_;
  int64_t next_graph_id_ ABSL_GUARDED_BY(mu_) = 1;
  struct RegisteredGraph {
    std::shared_ptr<Executor> executor;
    // The master that registered it (empty when the request did not say).
    std::string master_task;
    std::string master_incarnation;
  };
  absl::flat_hash_map<std::string, RegisteredGraph> graphs_
      ABSL_GUARDED_BY(mu_);
  // The latest process (master incarnation) of each master task that
  // registered graphs here.
  absl::flat_hash_map<std::string, std::string> master_processes_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int64_t, std::shared_ptr<Step>> steps_
      ABSL_GUARDED_BY(mu_);
  // Recently finished steps, oldest first, bounded: late pushes for them are
  // dropped instead of creating a step that nobody runs.
  // Steps dropped unclaimed keep why, for the error of a late RunGraph.
  std::deque<int64_t> finished_order_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int64_t, std::string> finished_ ABSL_GUARDED_BY(mu_);
  // Set once the job is done (RefuseNewSteps): why new steps are refused.
  std::string refuse_reason_ ABSL_GUARDED_BY(mu_);
  SteadyTime last_step_finished_ ABSL_GUARDED_BY(mu_) = SteadyNow();
  bool destroying_ ABSL_GUARDED_BY(mu_) = false;
  std::thread expiry_thread_;
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_WORKER_H_
