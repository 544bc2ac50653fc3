#include "distributed/master_session.h"

#include <atomic>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "base/step_trace.h"
#include "core/tensor_coding.h"
#include "graph/graph_def_io.h"
#include "graph/partition.h"
#include "graph/placer.h"
#include "graph/subgraph.h"

namespace distflow {
namespace {

// Errors that mean "this registration is stale": the task restarted or
// forgot the graph.
bool NeedsReregistration(const absl::Status& s) {
  return absl::IsAborted(s) &&
         (s.message().find("register it again") != absl::string_view::npos ||
          s.message().find("registered again") != absl::string_view::npos);
}

}  // namespace

MasterSession::MasterSession(const MasterEnv* env, std::string handle,
                             std::string master_incarnation)
    : env_(env),
      handle_(std::move(handle)),
      master_incarnation_(std::move(master_incarnation)) {
  std::random_device rd;
  step_ids_.seed((uint64_t{rd()} << 32) ^ rd());
}

MasterSession::~MasterSession() { (void)Close(); }

absl::Status MasterSession::Extend(const proto::GraphDef& graph) {
  absl::MutexLock lock(&mu_);
  if (closed_) {
    return absl::FailedPreconditionError(
        absl::StrCat("Extend on closed session ", handle_));
  }
  const int first_new = graph_.num_nodes();
  if (absl::Status s = ImportGraphDef(graph, &graph_); !s.ok()) {
    graph_.TruncateTo(first_new);
    return s;
  }
  return absl::OkStatus();
}

int64_t MasterSession::NewStepId() {
  absl::MutexLock lock(&mu_);
  // Positive and random: steps of masters on different tasks (between-graph
  // replication) share the ps tasks' workers without colliding.
  return static_cast<int64_t>(step_ids_() >> 1);
}

absl::StatusOr<std::shared_ptr<const MasterSession::Registration>>
MasterSession::Register(std::unique_ptr<Graph> call_graph) {
  PlacementOptions placement;
  placement.jobs = env_->jobs;
  placement.default_job = env_->job_name;
  placement.default_task = env_->task_index;
  DF_RETURN_IF_ERROR(PlaceGraph(placement, call_graph.get()));
  DF_ASSIGN_OR_RETURN(auto parts, PartitionGraph(*call_graph));
  auto registration = std::make_shared<Registration>();
  for (auto& [task, graph_def] : parts) {
    DF_ASSIGN_OR_RETURN(WorkerInterface * worker,
                        env_->worker_cache->GetWorker(task));
    proto::RegisterGraphRequest request;
    request.set_session_handle(handle_);
    request.set_master_task(env_->task_name);
    request.set_master_incarnation(master_incarnation_);
    *request.mutable_graph() = std::move(graph_def);
    proto::RegisterGraphResponse response;
    absl::Status s = CallAndWait([&](StatusCallback done) {
      worker->RegisterGraphAsync(&request, &response, std::move(done));
    });
    if (!s.ok()) {
      Deregister(*registration);
      return s;
    }
    registration->partitions.push_back(
        {task, worker, response.graph_handle(), response.incarnation()});
  }
  // The partition with the feeds and fetches (this task's) goes last, once
  // the remote ones are under way (see RunPartitions).
  std::stable_partition(
      registration->partitions.begin(), registration->partitions.end(),
      [this](const Partition& p) { return p.task != env_->task_name; });
  return registration;
}

absl::StatusOr<std::shared_ptr<const MasterSession::Registration>>
MasterSession::GetRegistration(
    const std::vector<std::pair<std::string, Tensor>>& feeds,
    const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets, std::string* key) {
  CallSignature signature;
  for (const auto& feed : feeds) signature.feeds.push_back(feed.first);
  signature.fetches = fetches;
  signature.targets = targets;
  *key = absl::StrCat(absl::StrJoin(signature.feeds, ","), "|",
                      absl::StrJoin(fetches, ","), "|",
                      absl::StrJoin(targets, ","));
  absl::MutexLock lock(&mu_);
  if (closed_) {
    return absl::FailedPreconditionError(
        absl::StrCat("Run on closed session ", handle_));
  }
  auto it = registrations_.find(*key);
  if (it != registrations_.end()) return it->second;
  DF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> call_graph,
                      BuildCallGraph(graph_, signature));
  DF_ASSIGN_OR_RETURN(auto registration, Register(std::move(call_graph)));
  registrations_.emplace(*key, registration);
  return registration;
}

absl::StatusOr<std::vector<Tensor>> MasterSession::Run(
    const std::vector<std::pair<std::string, Tensor>>& feeds,
    const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets, CancellationManager* cancel) {
  std::string key;
  DF_ASSIGN_OR_RETURN(auto registration,
                      GetRegistration(feeds, fetches, targets, &key));
  std::vector<Tensor> args;
  for (const auto& feed : feeds) args.push_back(feed.second);
  std::vector<Tensor> fetched;
  absl::Status s = RunPartitions(
      *registration, args, static_cast<int>(fetches.size()), cancel, &fetched);
  if (NeedsReregistration(s)) {
    // The next run registers afresh (with the restarted task's new
    // incarnation); this one reports the failure.
    absl::MutexLock lock(&mu_);
    auto it = registrations_.find(key);
    if (it != registrations_.end() && it->second == registration) {
      registrations_.erase(it);
    }
  }
  DF_RETURN_IF_ERROR(s);
  for (size_t i = 0; i < fetched.size(); ++i) {
    if (!fetched[i].IsInitialized()) {
      return absl::InternalError(
          absl::StrCat("fetch '", fetches[i], "' produced no value"));
    }
  }
  return fetched;
}

namespace {

// The state of one step's RunGraph calls, shared with their callbacks (which
// may run after RunPartitions has returned, such as a late AbortStep reply).
struct StepCalls {
  struct Call {
    WorkerInterface* worker = nullptr;
    proto::RunGraphRequest request;
    std::vector<Tensor> feeds;
    std::vector<Tensor> fetches;
    proto::AbortStepRequest abort_request;
    proto::AbortStepResponse abort_response;
  };
  std::vector<Call> calls;
  absl::Mutex mu;
  absl::Status first_error ABSL_GUARDED_BY(mu);
  // Per call: whether its RunGraph has returned OK.
  std::vector<bool> finished_ok ABSL_GUARDED_BY(mu);
  size_t pending ABSL_GUARDED_BY(mu) = 0;
  size_t aborts_pending ABSL_GUARDED_BY(mu) = 0;
  bool aborting ABSL_GUARDED_BY(mu) = false;
  // Whether GetStatus calls to finished tasks are in flight.
  bool probing ABSL_GUARDED_BY(mu) = false;

  bool AllDone() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return pending == 0 && aborts_pending == 0;
  }
};

// How long the master waits for a step of several partitions before it
// checks that the tasks whose partitions have ended are still alive (see
// ProbeFinishedTasks). A step shorter than this sends no probe.
constexpr absl::Duration kProbeInterval = absl::Seconds(1);

// The error of a step whose client's call ended before the step did.
absl::Status StepCancelled(int64_t step_id, const std::string& session) {
  return absl::CancelledError(absl::StrCat(
      "step ", step_id, " of session ", session,
      " was aborted on every task: its client's call ended before the step "
      "did (the client went away, cancelled the call or passed its "
      "deadline)"));
}

// Tells every task to abort the step: partitions that wait for tensors from
// the failed one wake up with `cause`.
void AbortAll(const std::shared_ptr<StepCalls>& state, int64_t step_id,
              const absl::Status& cause) {
  const size_t n = state->calls.size();
  for (size_t j = 0; j < n; ++j) {
    StepCalls::Call& call = state->calls[j];
    call.abort_request.set_step_id(step_id);
    call.abort_request.set_code(static_cast<int>(cause.code()));
    call.abort_request.set_message(std::string(cause.message()));
  }
  for (size_t j = 0; j < n; ++j) {
    StepCalls::Call& call = state->calls[j];
    call.worker->AbortStepAsync(&call.abort_request, &call.abort_response,
                                [state](const absl::Status&) {
                                  absl::MutexLock lock(&state->mu);
                                  --state->aborts_pending;
                                });
  }
}

// Records a failure of the step; the first one aborts it on every task. A
// step whose partitions have all answered is over and is left as they say.
void FailStep(const std::shared_ptr<StepCalls>& state, int64_t step_id,
              const absl::Status& s) {
  bool start_abort = false;
  {
    absl::MutexLock lock(&state->mu);
    if (state->pending == 0) return;
    if (state->first_error.ok()) state->first_error = s;
    if (!state->aborting) {
      state->aborting = true;
      start_abort = true;
      state->aborts_pending = state->calls.size();
    }
  }
  if (start_abort) AbortAll(state, step_id, s);
}

// A task whose part of a step has ended, as a probe sees it.
struct FinishedTask {
  WorkerInterface* worker = nullptr;
  std::string task;
  std::string address;
  uint64_t incarnation = 0;  // The one its graph was registered with.
};

// Asks every task in `tasks` for its status, without waiting: one that does
// not answer (within the control deadline) fails the step with UNAVAILABLE,
// one with another incarnation (restarted) with ABORTED, both naming it.
// `state->probing` stays true until every answer is in, so that a slow answer
// does not stack up probes, nor hold up the end of the step.
void ProbeFinishedTasks(const std::shared_ptr<StepCalls>& state,
                        int64_t step_id, std::vector<FinishedTask> tasks) {
  struct Probe {
    FinishedTask task;
    proto::GetStatusRequest request;
    proto::GetStatusResponse response;
  };
  auto left = std::make_shared<std::atomic<size_t>>(tasks.size());
  for (FinishedTask& task : tasks) {
    auto probe = std::make_shared<Probe>();
    probe->task = std::move(task);
    WorkerInterface* worker = probe->task.worker;
    worker->GetStatusAsync(
        &probe->request, &probe->response,
        [state, step_id, probe, left](const absl::Status& s) {
          const std::string where = absl::StrCat("task ", probe->task.task,
                                                 " at ", probe->task.address);
          if (!s.ok()) {
            FailStep(
                state, step_id,
                absl::UnavailableError(absl::StrCat(
                    where, " died or stopped answering after its part of step ",
                    step_id,
                    " had ended, while other tasks were still running "
                    "theirs: ",
                    s.message(), ". Restart the task and run the step again")));
          } else if (probe->response.incarnation() != probe->task.incarnation) {
            // The message matches NeedsReregistration: the next step
            // registers the graphs with the new incarnation.
            FailStep(
                state, step_id,
                absl::AbortedError(absl::StrCat(
                    where, " restarted after its part of step ", step_id,
                    " had ended (incarnation ", probe->response.incarnation(),
                    ", registered with ", probe->task.incarnation,
                    "); its graphs must be registered again, which the "
                    "next step does")));
          }
          if (left->fetch_sub(1) == 1) {
            absl::MutexLock lock(&state->mu);
            state->probing = false;
          }
        });
  }
}

}  // namespace

absl::Status MasterSession::RunPartitions(const Registration& registration,
                                          const std::vector<Tensor>& args,
                                          int num_fetches,
                                          CancellationManager* cancel,
                                          std::vector<Tensor>* fetched) {
  const int64_t step_id = NewStepId();
  const size_t n = registration.partitions.size();
  trace::ScopedSpan step_span("step", "step");
  auto state = std::make_shared<StepCalls>();
  state->calls.resize(n);
  {
    absl::MutexLock lock(&state->mu);
    state->pending = n;
    state->finished_ok.assign(n, false);
  }
  for (size_t i = 0; i < n; ++i) {
    const Partition& p = registration.partitions[i];
    StepCalls::Call& call = state->calls[i];
    call.worker = p.worker;
    call.request.set_graph_handle(p.graph_handle);
    call.request.set_incarnation(p.incarnation);
    call.request.set_step_id(step_id);
    call.request.set_num_fetches(num_fetches);
    if (p.task == env_->task_name) call.feeds = args;
  }
  // Registered before any partition starts, so that a cancellation can
  // never miss a running step; a step cancelled already does not start.
  CancellationManager::Token cancel_token = 0;
  if (cancel != nullptr && !cancel->RegisterCallback(
                               [state, step_id, handle = handle_] {
                                 const absl::Status cancelled =
                                     StepCancelled(step_id, handle);
                                 DF_LOG(Warning) << cancelled.message();
                                 FailStep(state, step_id, cancelled);
                               },
                               &cancel_token)) {
    return StepCancelled(step_id, handle_);
  }
  auto partition_done = [state, step_id](size_t i) {
    return [state, step_id, i](const absl::Status& s) {
      if (!s.ok()) FailStep(state, step_id, s);
      absl::MutexLock lock(&state->mu);
      if (s.ok()) state->finished_ok[i] = true;
      --state->pending;
    };
  };
  if (n == 1) {
    // One task cannot wait on another, so this thread, which would only
    // wait, runs the call itself: a thread wake-up less per step, a large
    // share of a small step.
    StepCalls::Call& call = state->calls[0];
    partition_done(0)(call.worker->RunGraphWithTensors(
        &call.request, std::move(call.feeds), &call.fetches));
  } else {
    for (size_t i = 0; i < n; ++i) {
      StepCalls::Call& call = state->calls[i];
      call.worker->RunGraphWithTensorsAsync(&call.request,
                                            std::move(call.feeds),
                                            &call.fetches, partition_done(i));
    }
  }
  absl::Status first_error;
  {
    absl::MutexLock lock(&state->mu);
    const absl::Condition all_done(state.get(), &StepCalls::AllDone);
    // A task whose partition has ended may die before the tensors it pushed
    // reach their receivers (a push does not wait for the receiver), and
    // then nobody would abort the step: the dead task cannot, and its
    // RunGraph already answered OK. So while the step runs on, this thread
    // checks now and then that those tasks are alive and not restarted.
    while (!state->mu.AwaitWithTimeout(all_done, kProbeInterval)) {
      // Failing already, or the last probe has not been answered yet.
      if (state->aborting || state->probing) continue;
      std::vector<FinishedTask> finished;
      for (size_t i = 0; i < n; ++i) {
        if (!state->finished_ok[i]) continue;
        const Partition& p = registration.partitions[i];
        finished.push_back({p.worker, p.task,
                            env_->worker_cache->AddressOf(p.task),
                            p.incarnation});
      }
      if (finished.empty()) continue;
      state->probing = true;
      state->mu.Unlock();
      ProbeFinishedTasks(state, step_id, std::move(finished));
      state->mu.Lock();
    }
    first_error = state->first_error;
  }
  if (cancel != nullptr) cancel->DeregisterCallback(cancel_token);
  if (!first_error.ok()) return first_error;

  fetched->assign(num_fetches, Tensor());
  for (size_t i = 0; i < n; ++i) {
    std::vector<Tensor>& fetches = state->calls[i].fetches;
    for (int j = 0; j < static_cast<int>(fetches.size()) && j < num_fetches;
         ++j) {
      // Entries of other partitions' fetches are uninitialized.
      if (fetches[j].IsInitialized()) (*fetched)[j] = std::move(fetches[j]);
    }
  }
  return absl::OkStatus();
}

void MasterSession::Deregister(const Registration& registration) {
  for (const Partition& p : registration.partitions) {
    proto::DeregisterGraphRequest request;
    request.set_graph_handle(p.graph_handle);
    proto::DeregisterGraphResponse response;
    // Best effort: a dead task has forgotten the graph anyway.
    (void)CallAndWait([&](StatusCallback done) {
      p.worker->DeregisterGraphAsync(&request, &response, std::move(done));
    });
  }
}

absl::Status MasterSession::Close() {
  absl::flat_hash_map<std::string, std::shared_ptr<const Registration>>
      registrations;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::OkStatus();
    closed_ = true;
    registrations.swap(registrations_);
  }
  for (const auto& [key, registration] : registrations) {
    Deregister(*registration);
  }
  return absl::OkStatus();
}

}  // namespace distflow
