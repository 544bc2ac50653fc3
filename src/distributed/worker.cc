#include "distributed/worker.h"

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "base/step_trace.h"
#include "core/tensor_coding.h"
#include "graph/graph_def_io.h"
#include "graph/placer.h"
#include "runtime/call_frame.h"
#include "runtime/rendezvous.h"

namespace distflow {
namespace {

// How many finished step ids a worker remembers to refuse late tensors.
constexpr size_t kFinishedStepsRemembered = 1 << 16;
// The most values one RunGraph may fetch (far more than a partition has).
constexpr int kMaxFetchesPerRunGraph = 1 << 20;
// The most graphs a task keeps registered at once. A master registers one per
// step signature and deregisters them when its session closes; a master that
// died without closing leaves its graphs until its task registers again, and
// this bounds what such masters, or a peer that never deregisters, can pin.
constexpr size_t kMaxRegisteredGraphs = 1 << 14;

uint64_t NewIncarnation() {
  std::random_device rd;
  std::mt19937_64 gen((uint64_t{rd()} << 32) ^ rd());
  uint64_t value = 0;
  while (value == 0) value = gen();  // 0 means "any" on the wire
  return value;
}

}  // namespace

// The rendezvous of one step on this task: values for this task wait in a
// local table; values for another task are pushed to it.
class Worker::StepRendezvous : public Rendezvous {
 public:
  StepRendezvous(Worker* worker, int64_t step_id)
      : worker_(worker), step_id_(step_id) {}

  void SendAsync(const std::string& key, Tensor value,
                 SendCallback done) override {
    std::vector<absl::string_view> parts = absl::StrSplit(key, ';');
    if (parts.size() != 3) {
      done(absl::InternalError(
          absl::StrCat("malformed rendezvous key '", key, "'")));
      return;
    }
    if (TaskOfDevice(std::string(parts[1])) == worker_->task_name()) {
      local_.SendAsync(key, std::move(value), std::move(done));
      return;
    }
    absl::Status aborted = local_.status();
    if (!aborted.ok()) {
      done(aborted);
      return;
    }
    worker_->Push(step_id_, key, value, std::move(done));
  }
  void RecvAsync(const std::string& key, RecvCallback done) override {
    local_.RecvAsync(key, std::move(done));
  }
  void StartAbort(const absl::Status& status) override {
    local_.StartAbort(status);
  }
  // A value pushed by another task. With `answer_first` the pusher is
  // answered before the value's consumers run (on this thread, often the
  // rest of a partition), not after them.
  void Deliver(const std::string& key, Tensor value, SendCallback done,
               bool answer_first) {
    if (answer_first) {
      local_.SendAsyncAnswerFirst(key, std::move(value), std::move(done));
    } else {
      local_.SendAsync(key, std::move(value), std::move(done));
    }
  }

 private:
  Worker* const worker_;
  const int64_t step_id_;
  LocalRendezvous local_;
};

Worker::Worker(WorkerEnv env)
    : env_(std::move(env)),
      incarnation_(NewIncarnation()),
      push_budget_(env_.max_pending_push_bytes_per_peer,
                   env_.max_pending_push_bytes),
      device_(env_.task_name + "/device:CPU:0", env_.intra_op_pool) {
  if (env_.unclaimed_step_timeout != absl::InfiniteDuration()) {
    expiry_thread_ = std::thread([this] { ExpireUnclaimedSteps(); });
  }
}

Worker::~Worker() {
  {
    absl::MutexLock lock(&mu_);
    destroying_ = true;
  }
  if (expiry_thread_.joinable()) expiry_thread_.join();
  AbortAllSteps(absl::CancelledError("worker destroyed"));
}

void Worker::GetStatusAsync(const proto::GetStatusRequest* request,
                            proto::GetStatusResponse* response,
                            StatusCallback done) {
  response->set_task(env_.task_name);
  response->set_incarnation(incarnation_);
  done(absl::OkStatus());
}

void Worker::RegisterGraphAsync(const proto::RegisterGraphRequest* request,
                                proto::RegisterGraphResponse* response,
                                StatusCallback done) {
  auto graph = std::make_unique<Graph>();
  absl::Status s = ImportGraphDef(request->graph(), graph.get());
  if (s.ok()) {
    for (const auto& node : graph->nodes()) {
      node->set_assigned_device(device_.name());
    }
  }
  std::unique_ptr<Executor> executor;
  if (s.ok()) {
    Executor::Options options;
    options.device = &device_;
    auto created = Executor::Create(std::move(graph), options);
    if (created.ok()) {
      executor = std::move(*created);
    } else {
      s = created.status();
    }
  }
  if (!s.ok()) {
    done(AddErrorContext(
        s, absl::StrCat("registering a graph on task ", env_.task_name)));
    return;
  }
  std::vector<std::shared_ptr<Step>> replaced;
  {
    absl::MutexLock lock(&mu_);
    if (!request->master_task().empty()) {
      s = AdmitMaster(request->master_task(), request->master_incarnation(),
                      &replaced);
    }
    if (s.ok() && graphs_.size() >= kMaxRegisteredGraphs) {
      s = absl::ResourceExhaustedError(absl::StrCat(
          "task ", env_.task_name, " holds ", graphs_.size(),
          " registered graphs, the most it keeps; refusing one more from ",
          request->master_task().empty() ? "a master that did not name itself"
                                         : request->master_task(),
          " (are sessions closed when they are done?)"));
    }
    if (s.ok()) {
      const std::string handle = absl::StrCat("graph_", next_graph_id_++);
      graphs_.emplace(
          handle, RegisteredGraph{std::move(executor), request->master_task(),
                                  request->master_incarnation()});
      response->set_graph_handle(handle);
    }
  }
  for (const auto& step : replaced) {
    const absl::Status aborted = absl::AbortedError(absl::StrCat(
        "a step of an earlier process of task ", request->master_task(),
        " on task ", env_.task_name, ": process ",
        request->master_incarnation(), " of that task replaced it"));
    step->rendezvous->StartAbort(aborted);
    step->cancellation.StartCancel();
  }
  if (!s.ok()) {
    done(s);
    return;
  }
  response->set_incarnation(incarnation_);
  done(absl::OkStatus());
}

void Worker::DeregisterGraphAsync(const proto::DeregisterGraphRequest* request,
                                  proto::DeregisterGraphResponse* response,
                                  StatusCallback done) {
  {
    absl::MutexLock lock(&mu_);
    // Running steps hold their own reference to the executor.
    graphs_.erase(request->graph_handle());
  }
  done(absl::OkStatus());
}

void Worker::RunGraphAsync(const proto::RunGraphRequest* request,
                           proto::RunGraphResponse* response,
                           StatusCallback done) {
  std::vector<Tensor> args;
  for (const proto::TensorProto& feed : request->feed()) {
    auto value = TensorFromProto(feed);
    if (!value.ok()) {
      done(AddErrorContext(value.status(), "RunGraph feed"));
      return;
    }
    args.push_back(std::move(*value));
  }
  // A call that came over RPC: this is the task's RPC thread, which would
  // only hand the step to the inter-op pool and go back to polling. Starting
  // here saves the pool thread's wake-up before the partition's first reads
  // and sends (docs/benchmarks.md, "Partitions started on the RPC thread").
  RunGraphImpl(*request, std::move(args), /*start_on_caller=*/true,
               [response, done = std::move(done)](absl::Status s,
                                                  std::vector<Tensor> retvals) {
                 if (s.ok()) {
                   for (const Tensor& value : retvals) {
                     proto::TensorProto* out = response->add_fetch();
                     if (value.IsInitialized()) TensorToProto(value, out);
                   }
                 }
                 done(s);
               });
}

void Worker::RunGraphWithTensorsAsync(const proto::RunGraphRequest* request,
                                      std::vector<Tensor> feeds,
                                      std::vector<Tensor>* fetches,
                                      StatusCallback done) {
  // The master's own partition: its caller goes on to start or wait for the
  // step's other partitions, so the step starts on the pool (starting it
  // here measured no faster).
  RunGraphImpl(*request, std::move(feeds), /*start_on_caller=*/false,
               [fetches, done = std::move(done)](absl::Status s,
                                                 std::vector<Tensor> retvals) {
                 if (s.ok()) *fetches = std::move(retvals);
                 done(s);
               });
}

void Worker::RunGraphImpl(
    const proto::RunGraphRequest& request, std::vector<Tensor> args,
    bool start_on_caller,
    std::function<void(absl::Status, std::vector<Tensor>)> done) {
  const int64_t step_id = request.step_id();
  if (request.incarnation() != 0 && request.incarnation() != incarnation_) {
    done(absl::AbortedError(absl::StrCat(
             "task ", env_.task_name,
             " restarted since its graph was registered (incarnation ",
             request.incarnation(), ", now ", incarnation_,
             "); the graph must be registered again")),
         {});
    return;
  }
  std::shared_ptr<Executor> executor;
  std::string master_task, master_incarnation;
  {
    absl::MutexLock lock(&mu_);
    auto it = graphs_.find(request.graph_handle());
    if (it != graphs_.end()) {
      executor = it->second.executor;
      master_task = it->second.master_task;
      master_incarnation = it->second.master_incarnation;
    }
  }
  if (executor == nullptr) {
    done(absl::AbortedError(absl::StrCat(
             "task ", env_.task_name, " has no graph '", request.graph_handle(),
             "' (the task restarted or the session closed); register it "
             "again")),
         {});
    return;
  }
  // (A count from the network: a negative one would throw in the frame's
  // vector, and a huge one allocate for nothing.)
  if (request.num_fetches() < 0 ||
      request.num_fetches() > kMaxFetchesPerRunGraph) {
    done(absl::InvalidArgumentError(absl::StrCat(
             "RunGraph of graph '", request.graph_handle(), "' on task ",
             env_.task_name, " asks for ", request.num_fetches(),
             " fetches; the count must be between 0 and ",
             kMaxFetchesPerRunGraph)),
         {});
    return;
  }
  absl::Status status;
  std::shared_ptr<Step> step = FindOrCreateStep(
      step_id, /*pushed=*/nullptr, &status, master_task, master_incarnation);
  if (step == nullptr) {
    done(status, {});
    return;
  }
  auto frame =
      std::make_shared<RunCallFrame>(std::move(args), request.num_fetches());
  Executor::RunArgs run_args;
  run_args.call_frame = frame.get();
  run_args.step_id = step_id;
  run_args.cancellation = &step->cancellation;
  run_args.runner = env_.inter_op_pool;
  run_args.rendezvous = step->rendezvous.get();
  run_args.start_on_caller = start_on_caller;
  const int64_t start_ns = trace::SpanStart();
  executor->RunAsync(run_args, [this, step, executor, frame, step_id, start_ns,
                                done = std::move(done)](absl::Status s) {
    trace::EndSpan("step", "partition", start_ns);
    if (!s.ok()) step->rendezvous->StartAbort(s);
    FinishStep(step_id);
    if (!s.ok() && s.message().find("task /job:") == absl::string_view::npos) {
      s = AddErrorContext(s, absl::StrCat("on task ", env_.task_name));
    }
    done(s, s.ok() ? frame->TakeRetvals() : std::vector<Tensor>());
  });
}

void Worker::AbortStepAsync(const proto::AbortStepRequest* request,
                            proto::AbortStepResponse* response,
                            StatusCallback done) {
  absl::Status reason(static_cast<absl::StatusCode>(request->code()),
                      request->message());
  if (reason.ok()) reason = absl::AbortedError("step aborted by its master");
  std::shared_ptr<Step> step;
  {
    absl::MutexLock lock(&mu_);
    auto it = steps_.find(request->step_id());
    if (it != steps_.end()) step = it->second;
  }
  if (step != nullptr) {
    step->rendezvous->StartAbort(reason);
    step->cancellation.StartCancel();
  }
  FinishStep(request->step_id());
  done(absl::OkStatus());
}

void Worker::PushTensorAsync(int64_t step_id, const std::string& key,
                             Tensor value, StatusCallback done) {
  PushTensorFromPeerAsync(step_id, key, std::move(value), std::string(),
                          std::move(done));
}

void Worker::PushTensorFromPeerAsync(int64_t step_id, const std::string& key,
                                     Tensor value, const std::string& peer,
                                     StatusCallback done) {
  absl::Status status;
  PushedTensor pushed{TaskOfDevice(key.substr(0, key.find(';'))),
                      static_cast<int64_t>(value.TotalBytes()), peer};
  std::shared_ptr<Step> step = FindOrCreateStep(step_id, &pushed, &status);
  if (step == nullptr) {
    done(status);
    return;
  }
  // The step's master waits for this task's RunGraph answer: told at once
  // that its tensor is here, it can get ready for that answer (its data
  // connection polls for it) while the tensor's consumers run here, such as
  // a ps's updates after the last gradient. Other pushers gain nothing from
  // an early answer, and writing it first would delay the consumers.
  step->rendezvous->Deliver(key, std::move(value), std::move(done),
                            pushed.from_master);
}

void Worker::ShutdownAsync(const proto::ShutdownRequest* request,
                           proto::ShutdownResponse* response,
                           StatusCallback done) {
  // Answer first: the stop may tear down the transport this reply travels on.
  done(absl::OkStatus());
  if (env_.request_stop) {
    env_.request_stop(request->reason(), request->idle_grace_ms());
  }
}

void Worker::RefuseNewSteps(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  refuse_reason_ = reason.empty() ? "the job is done" : reason;
}

bool Worker::IdleFor(absl::Duration period) {
  absl::MutexLock lock(&mu_);
  return steps_.empty() && SteadySince(last_step_finished_) >= period;
}

void Worker::AbortAllSteps(const absl::Status& status) {
  std::vector<std::shared_ptr<Step>> steps;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [id, step] : steps_) steps.push_back(step);
  }
  for (auto& step : steps) {
    step->rendezvous->StartAbort(status);
    step->cancellation.StartCancel();
  }
}

absl::Status Worker::AdmitMaster(const std::string& master_task,
                                 const std::string& incarnation,
                                 std::vector<std::shared_ptr<Step>>* replaced) {
  auto [latest, first] =
      master_processes_.try_emplace(master_task, incarnation);
  if (first || latest->second == incarnation) return absl::OkStatus();
  latest->second = incarnation;
  for (const auto& [id, step] : steps_) {
    if (step->master_task == master_task && !step->master_incarnation.empty() &&
        step->master_incarnation != incarnation) {
      replaced->push_back(step);
    }
  }
  int dropped = 0;
  for (auto it = graphs_.begin(); it != graphs_.end();) {
    if (it->second.master_task == master_task &&
        it->second.master_incarnation != incarnation) {
      // Steps still running hold their own reference to the executor.
      graphs_.erase(it++);
      ++dropped;
    } else {
      ++it;
    }
  }
  if (dropped > 0) {
    DF_LOG(Warning) << "Task " << env_.task_name << " dropped " << dropped
                    << " graph(s) registered by another process of task "
                    << master_task << ": process " << incarnation
                    << " of that task registers its own.";
  }
  return absl::OkStatus();
}

int Worker::NumGraphs() {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(graphs_.size());
}

int Worker::NumSteps() {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(steps_.size());
}

int Worker::NumUnclaimedSteps() {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (const auto& [id, step] : steps_) n += step->claimed ? 0 : 1;
  return n;
}

int64_t Worker::UnclaimedPushedBytes() {
  absl::MutexLock lock(&mu_);
  int64_t bytes = 0;
  for (const auto& [id, step] : steps_) {
    if (!step->claimed) bytes += step->pushed_bytes;
  }
  return bytes;
}

void Worker::ExpireUnclaimedSteps() {
  const absl::Duration timeout = env_.unclaimed_step_timeout;
  // Tensors are dropped between `timeout` and `timeout + period` after their
  // step's first push.
  const absl::Duration period =
      std::clamp(timeout / 4, absl::Milliseconds(1), absl::Seconds(1));
  struct Expired {
    std::shared_ptr<Step> step;
    std::string reason;
  };
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&destroying_), period)) {
    // (The steady clock: a step of the wall clock must not drop tensors
    // early or keep them for the size of the jump.)
    const auto now = std::chrono::steady_clock::now();
    const auto limit = absl::ToChronoNanoseconds(timeout);
    std::vector<std::pair<int64_t, Expired>> expired;
    for (const auto& [id, step] : steps_) {
      if (step->claimed || now - step->first_push < limit) continue;
      std::vector<std::string> senders(step->senders.begin(),
                                       step->senders.end());
      std::sort(senders.begin(), senders.end());
      expired.push_back(
          {id,
           {step,
            absl::StrCat(
                "step ", id, " was dropped on task ", env_.task_name, ": the ",
                step->pushed_tensors, " tensor(s) (", step->pushed_bytes,
                " bytes) that ", absl::StrJoin(senders, ", "),
                " pushed for it waited ", absl::FormatDuration(timeout),
                " and no RunGraph of the step came (its master failed the "
                "step or went away before starting it here); run the step "
                "again")}});
    }
    for (auto& [id, e] : expired) FinishStepLocked(id, e.reason);
    if (expired.empty()) continue;
    // Outside the lock: the tensors go with the rendezvous's table.
    mu_.Unlock();
    for (auto& [id, e] : expired) {
      DF_LOG(Warning) << e.reason;
      e.step->rendezvous->StartAbort(absl::DeadlineExceededError(e.reason));
    }
    expired.clear();
    mu_.Lock();
  }
}

std::shared_ptr<Worker::Step> Worker::FindOrCreateStep(
    int64_t step_id, PushedTensor* pushed, absl::Status* status,
    const std::string& master_task, const std::string& master_incarnation) {
  // What was pushed is kept (under the lock, with the lookup) only for the
  // log line of a step that never runs here.
  auto record = [this, pushed, &master_task, &master_incarnation,
                 step_id](Step* step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (pushed == nullptr) {
      if (!step->claimed) ReleaseBudgetLocked(step);
      step->claimed = true;
      step->master_task = master_task;
      step->master_incarnation = master_incarnation;
      return absl::OkStatus();
    }
    if (!step->claimed && !pushed->peer.empty()) {
      absl::Status s = push_budget_.Reserve(
          pushed->peer, pushed->bytes,
          absl::StrCat("a tensor claiming to come from ",
                       pushed->sender.empty() ? "(no task)" : pushed->sender,
                       " for step ", step_id,
                       " (which has not started on task ", env_.task_name,
                       ")"));
      if (!s.ok()) return s;
      step->budgeted[pushed->peer] += pushed->bytes;
    }
    pushed->from_master =
        !step->master_task.empty() && pushed->sender == step->master_task;
    if (!step->claimed) {
      ++step->pushed_tensors;
      step->pushed_bytes += pushed->bytes;
      step->senders.insert(pushed->sender);
    }
    return absl::OkStatus();
  };
  absl::MutexLock lock(&mu_);
  auto it = steps_.find(step_id);
  if (it != steps_.end()) {
    *status = record(it->second.get());
    if (!status->ok()) return nullptr;
    return it->second;
  }
  if (!refuse_reason_.empty()) {
    // A step already under way here (steps_ above) still finishes: only new
    // ones are refused, so that a worker's last step is not an error.
    *status = absl::OutOfRangeError(absl::StrCat(
        "task ", env_.task_name, " takes no new steps: ", refuse_reason_,
        " (training has ended)"));
    return nullptr;
  }
  if (auto finished = finished_.find(step_id); finished != finished_.end()) {
    *status = absl::AbortedError(
        !finished->second.empty()
            ? finished->second
            : absl::StrCat("step ", step_id,
                           " has already finished or was aborted on task ",
                           env_.task_name));
    return nullptr;
  }
  auto step = std::make_shared<Step>();
  if (pushed != nullptr) step->first_push = std::chrono::steady_clock::now();
  *status = record(step.get());
  if (!status->ok()) return nullptr;
  step->rendezvous = std::make_shared<StepRendezvous>(this, step_id);
  steps_.emplace(step_id, step);
  return step;
}

void Worker::FinishStep(int64_t step_id, std::string expired_reason) {
  absl::MutexLock lock(&mu_);
  FinishStepLocked(step_id, std::move(expired_reason));
}

void Worker::ReleaseBudgetLocked(Step* step) {
  for (const auto& [peer, bytes] : step->budgeted) {
    push_budget_.Release(peer, bytes);
  }
  step->budgeted.clear();
}

void Worker::FinishStepLocked(int64_t step_id, std::string expired_reason) {
  auto step = steps_.find(step_id);
  if (step != steps_.end()) {
    ReleaseBudgetLocked(step->second.get());
    steps_.erase(step);
    last_step_finished_ = SteadyNow();
  }
  if (finished_.emplace(step_id, std::move(expired_reason)).second) {
    finished_order_.push_back(step_id);
    if (finished_order_.size() > kFinishedStepsRemembered) {
      finished_.erase(finished_order_.front());
      finished_order_.pop_front();
    }
  }
}

void Worker::Push(int64_t step_id, const std::string& key, const Tensor& value,
                  StatusCallback done) {
  std::vector<absl::string_view> parts = absl::StrSplit(key, ';');
  const std::string task = TaskOfDevice(std::string(parts[1]));
  auto worker = env_.worker_cache->GetWorker(task);
  if (!worker.ok()) {
    done(worker.status());
    return;
  }
  // The send is done as soon as the transport holds the tensor (it keeps a
  // reference to the buffer): the producer's partition does not wait for the
  // receiver's acknowledgement, which would add a network half round trip to
  // every step whose producer finishes last. A push that fails aborts the
  // step on the receiving task, whose Recv would otherwise wait for a tensor
  // that never comes; the master then aborts it everywhere.
  WorkerInterface* receiver = *worker;
  receiver->PushTensorAsync(
      step_id, key, value,
      [receiver, step_id, key, from = env_.task_name](const absl::Status& s) {
        if (s.ok()) return;
        struct Abort {
          proto::AbortStepRequest request;
          proto::AbortStepResponse response;
        };
        auto abort = std::make_shared<Abort>();
        abort->request.set_step_id(step_id);
        abort->request.set_code(static_cast<int>(s.code()));
        abort->request.set_message(absl::StrCat(
            "pushing '", key, "' from task ", from, " failed: ", s.message()));
        // The push may have failed only because the connection to the
        // receiver was down for a moment (it restarted): the abort must still
        // reach it, or its step waits for the tensor until the step deadline.
        abort->request.set_wait_for_ready(true);
        receiver->AbortStepAsync(&abort->request, &abort->response,
                                 [abort](const absl::Status&) {});
      });
  done(absl::OkStatus());
}

}  // namespace distflow
