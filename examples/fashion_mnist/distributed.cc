#include "examples/fashion_mnist/distributed.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "distflow/distflow.h"
#include "examples/example_util.h"

namespace fashion_mnist {

namespace df = distflow;

namespace {

// How long a worker waits for the ps tasks to start and the chief to
// initialize the model, and how long the chief waits for the other workers
// to finish before it ends the job anyway.
constexpr int kStartupSeconds = 120;
constexpr auto kWorkersDoneTimeout = std::chrono::seconds(60);
constexpr auto kPollInterval = std::chrono::milliseconds(200);

// This task's place among the training replicas: the chief job's task (if the
// cluster has one) first, then the workers in index order.
struct Replica {
  int index = 0;
  int count = 0;
  bool is_chief = false;
  std::string name;  // "worker 1", for logs
};

absl::StatusOr<Replica> ReplicaOf(const df::TaskConfig& task) {
  const int chiefs = task.cluster.num_tasks("chief");
  Replica r;
  r.count = chiefs + task.cluster.num_tasks("worker");
  r.is_chief = task.is_chief;
  r.name = absl::StrCat(task.job_name, " ", task.task_index);
  if (task.job_name == "chief") {
    r.index = 0;
  } else if (task.job_name == "worker") {
    r.index = chiefs + task.task_index;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--job_name (or TF_CONFIG's task type) must be ps, "
                     "worker or chief, got '",
                     task.job_name, "'"));
  }
  return r;
}

// The graph every replica builds: the model, placed by the replica device
// setter, and the ops that start and end the job.
struct ReplicaGraph {
  Model model;
  df::ops::Variable workers_done;  // replicas that have stopped training
  df::Output workers_done_set;     // whether workers_done has a value
  df::Output mark_done;            // adds this replica to workers_done
  // The monitored session's ready op: every global variable but
  // workers_done, which no checkpoint holds (a chief that restores one after
  // a ps restart sets the count afresh, see CountDoneWorkersHook).
  df::Output ready_op;
  // Saves and restores the model and the optimizer's state (not
  // workers_done, which belongs to one run of the job).
  std::shared_ptr<df::train::Saver> saver;
};

absl::StatusOr<ReplicaGraph> BuildReplicaGraph(const df::Scope& root,
                                               const df::TaskConfig& task,
                                               const Flags& flags,
                                               int replicas) {
  const df::Scope s = root.WithDeviceFunction(
      df::ReplicaDeviceSetter(task.cluster, task.TaskDevice()));
  ReplicaGraph g;
  ModelOptions model_options = flags.model;
  if (flags.issync) model_options.sync_replicas = replicas;
  auto model = BuildModel(s, model_options);
  if (!model.ok()) return model.status();
  g.model = *model;
  // The chief's summary hook writes it to the event file in
  // --checkpoint_dir, for TensorBoard.
  df::ops::ScalarSummary(s, "loss", g.model.loss);
  auto saver = df::train::Saver::Create(root);
  if (!saver.ok()) return saver.status();
  g.saver = *std::move(saver);
  g.workers_done = df::ops::Variable(s.WithOpName("workers_done"),
                                     df::Tensor::Scalar<int64_t>(0),
                                     df::ops::VariableOptions{false});
  g.workers_done_set = df::ops::IsVariableInitialized(s, g.workers_done);
  g.mark_done = df::ops::AssignAdd(s, g.workers_done, int64_t{1});
  std::vector<df::ops::Variable> model_variables;
  for (const df::ops::Variable& v : df::ops::GlobalVariables(root)) {
    if (v.var_name() != g.workers_done.var_name()) model_variables.push_back(v);
  }
  g.ready_op = df::ops::ReportUninitializedVariables(root, model_variables);
  if (!root.ok()) return root.status();
  return g;
}

// True once each time the global step passes a multiple of `period` (never
// for a period of 0), counting from the step first seen: a job restored at
// step 300 validates next at 400, not at once.
class EveryNSteps {
 public:
  explicit EveryNSteps(int64_t period) : period_(period) {}
  bool Due(int64_t step) {
    if (period_ <= 0) return false;
    const int64_t next = (step / period_ + 1) * period_;
    if (next_ < 0) next_ = next;
    if (step < next_) return false;
    next_ = next;
    return true;
  }

 private:
  const int64_t period_;
  int64_t next_ = -1;
};

// True for the errors of a step refused because the chief has ended the job
// (or of a ps already gone after it): the end of training, not a failure.
bool JobHasEnded(const absl::Status& s) {
  return absl::IsOutOfRange(s) || absl::IsUnavailable(s) ||
         absl::IsCancelled(s) || absl::IsAborted(s);
}

// Trains until the stop hook ends the session at the last global step;
// returns the local steps and the last global step read. The chief validates
// on `test` through the plain session `control` (no hooks, no step counted).
absl::StatusOr<std::pair<int64_t, int64_t>> TrainReplica(
    df::train::MonitoredTrainingSession* session, df::ClientSession* control,
    const ReplicaGraph& g, const Replica& replica, const Flags& flags,
    const df::data::LabeledImages& train, const df::data::LabeledImages* test) {
  const Model& m = g.model;
  const int64_t shard_size = train.images.dim_size(0) / replica.count;
  // Every replica trains on its own shard; the seed makes the shuffles differ
  // too.
  auto dataset = df::data::Dataset::FromTensors({train.images, train.labels})
                     .Shard(replica.count, replica.index)
                     .Shuffle(shard_size, flags.model.seed + replica.index)
                     .Repeat()
                     .Batch(flags.batch_size, /*drop_remainder=*/true)
                     .Prefetch(2);
  auto it = dataset.MakeIterator();
  if (!it.ok()) return it.status();

  // --epochs counts passes over the whole training set by all replicas.
  const int64_t last_step = flags.StepsFor(train.images.dim_size(0));
  const df::Tensor dropout = df::Tensor::Scalar(flags.model.dropout_rate);
  int64_t local_steps = 0, global_step = 0;
  EveryNSteps validation(flags.steps_to_validate);
  auto last_log = std::chrono::steady_clock::now();
  while (!session->ShouldStop()) {
    auto batch = (*it)->GetNext();
    if (!batch.ok()) return batch.status();
    auto out = session->Run({{m.images, (**batch)[0]},
                             {m.labels, (**batch)[1]},
                             {m.dropout_rate, dropout}},
                            {m.loss, m.global_step}, {m.train});
    if (absl::IsOutOfRange(out.status())) {
      // The job is done: the chief reached the last step and closed the
      // sync token queue while this worker waited for a token, or it ended
      // the job on the ps tasks (EndJob) before this worker's last step.
      break;
    }
    if (!out.ok()) return out.status();
    ++local_steps;
    global_step = (*out)[1].scalar<int64_t>();
    if (local_steps % flags.log_every == 0) {
      const auto now = std::chrono::steady_clock::now();
      const double secs = std::chrono::duration<double>(now - last_log).count();
      // A progress line (docs/formats.md), which `distflow local` shows as
      // the job's status line.
      std::fprintf(stderr,
                   "progress step=%lld/%lld loss=%.4f examples_per_sec=%.0f "
                   "local_step=%lld\n",
                   static_cast<long long>(global_step),
                   static_cast<long long>(last_step), (*out)[0].scalar<float>(),
                   flags.log_every * flags.batch_size / secs,
                   static_cast<long long>(local_steps));
      last_log = now;
    }
    if (test == nullptr || global_step >= last_step) continue;
    if (validation.Due(global_step)) {
      auto accuracy = Evaluate(control, m, *test);
      if (!accuracy.ok()) return accuracy.status();
      std::printf("global_step=%lld validation_accuracy=%.4f\n",
                  static_cast<long long>(global_step), *accuracy);
      std::fflush(stdout);
    }
  }
  // The step read with the last training step may predate its update.
  auto last = control->Run({m.global_step});
  if (last.ok()) {
    global_step = (*last)[0].scalar<int64_t>();
  } else if (!JobHasEnded(last.status())) {
    return last.status();
  }
  std::printf("%s: local_steps=%lld, stopped at global_step=%lld\n",
              replica.name.c_str(), static_cast<long long>(local_steps),
              static_cast<long long>(global_step));
  std::fflush(stdout);
  return std::make_pair(local_steps, global_step);
}

// The chief's end of the job (its monitored session's on_training_end):
// waits until every other replica has reported done, then ends the job on the
// ps tasks (EndJob), which exit once no step runs on them. The wait is
// bounded because a worker that died will never report; the job then ends
// anyway, and a straggler finds its next step refused (OUT_OF_RANGE), which
// it takes as the end.
absl::Status EndJobWhenOthersAreDone(df::ClientSession* control,
                                     const ReplicaGraph& g,
                                     const df::TaskConfig& task, int replicas) {
  const int others = replicas - 1;
  const auto deadline = std::chrono::steady_clock::now() + kWorkersDoneTimeout;
  int64_t done = 0;
  while (true) {
    auto out = control->Run({g.workers_done});
    if (!out.ok()) return out.status();
    done = (*out)[0].scalar<int64_t>();
    if (done >= others || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(kPollInterval);
  }
  if (done < others) {
    std::fprintf(stderr,
                 "only %lld of the other %d workers finished within %lld s; "
                 "ending the job anyway\n",
                 static_cast<long long>(done), others,
                 static_cast<long long>(kWorkersDoneTimeout.count()));
  }
  return df::EndJob(task.cluster);
}

// The chief's start of the count of workers done: 0, unless the ps already
// counts (a chief that restarted while the ps kept running): workers that
// reported before it came back will not report again.
absl::Status StartCountingDoneWorkers(df::ClientSession* session,
                                      const ReplicaGraph& g) {
  auto set = session->Run({g.workers_done_set});
  if (!set.ok()) return set.status();
  if (!(*set)[0].scalar<bool>()) {
    return session->RunTargets({g.workers_done.initializer()});
  }
  auto done = session->Run({g.workers_done});
  if (!done.ok()) return done.status();
  const int64_t count = (*done)[0].scalar<int64_t>();
  if (count > 0) {
    std::fprintf(stderr,
                 "the ps kept the count of workers done (%lld); keeping it\n",
                 static_cast<long long>(count));
  }
  return absl::OkStatus();
}

// The chief's: starts the count each time its monitored session is created,
// after the model is ready, so also after a ps restart (the count is lost
// with the ps then: workers that reported before it are waited for until
// the wait's timeout).
class CountDoneWorkersHook : public df::train::SessionRunHook {
 public:
  explicit CountDoneWorkersHook(const ReplicaGraph* g) : g_(g) {}
  absl::Status AfterCreateSession(df::ClientSession* session) override {
    return StartCountingDoneWorkers(session, *g_);
  }

 private:
  const ReplicaGraph* const g_;
};

absl::Status RunReplica(const df::TaskConfig& task, const Replica& replica,
                        const Flags& flags, const std::string& target) {
  auto train =
      df::data::LoadFashionMnist(flags.data_dir, df::data::Split::kTrain);
  if (!train.ok()) return train.status();
  df::data::LabeledImages test;
  if (replica.is_chief) {
    auto loaded =
        df::data::LoadFashionMnist(flags.data_dir, df::data::Split::kTest);
    if (!loaded.ok()) return loaded.status();
    test = *std::move(loaded);
  }

  df::Scope root = df::Scope::NewRootScope();
  auto graph = BuildReplicaGraph(root, task, flags, replica.count);
  if (!graph.ok()) return graph.status();
  // A plain session for what must not count as a training step or run the
  // hooks: validation and the end of the job.
  df::SessionOptions options;
  options.target = target;
  auto control = df::ClientSession::Create(root, options);
  if (!control.ok()) return control.status();

  const int64_t last_step = flags.StepsFor(train->images.dim_size(0));
  df::train::MonitoredTrainingSession::Options mts;
  mts.master = target;
  mts.is_chief = replica.is_chief;
  mts.checkpoint_dir = flags.checkpoint_dir;
  mts.save_checkpoint_steps = flags.save_checkpoint_steps;
  mts.scaffold.saver = graph->saver;
  mts.scaffold.ready_op = graph->ready_op;
  mts.chief_only_hooks.push_back(
      std::make_shared<CountDoneWorkersHook>(&*graph));
  mts.max_wait_secs = kStartupSeconds;
  if (graph->model.sync != nullptr) {
    mts.hooks.push_back(
        graph->model.sync->MakeSessionRunHook(replica.is_chief));
  }
  mts.hooks.push_back(df::train::StopAtStepHook::Create(last_step));
  mts.on_training_end = [&] {
    return EndJobWhenOthersAreDone(control->get(), *graph, task, replica.count);
  };
  auto session = df::train::MonitoredTrainingSession::Create(root, mts);
  if (!session.ok()) return session.status();
  auto steps = TrainReplica(session->get(), control->get(), *graph, replica,
                            flags, *train, replica.is_chief ? &test : nullptr);
  if (!steps.ok()) return steps.status();
  if (replica.is_chief) {
    // Before the job ends: EndJob makes the ps tasks refuse every step.
    auto accuracy = Evaluate(control->get(), graph->model, test);
    if (!accuracy.ok()) return accuracy.status();
    std::printf("test_accuracy=%.4f\n", *accuracy);
    std::fflush(stdout);
    // Saves the last checkpoint (with --checkpoint_dir), then waits for the
    // other workers and ends the job (on_training_end).
    return (*session)->Close();
  }
  if (absl::Status s = (*session)->Close(); !s.ok()) return s;
  auto marked = (*control)->Run({graph->mark_done});
  (void)(*control)->Close();
  if (!marked.ok() && JobHasEnded(marked.status())) {
    // The chief gave up waiting for this worker and ended the job.
    std::fprintf(stderr, "%s: the job ended before this worker reported: %s\n",
                 replica.name.c_str(), marked.status().ToString().c_str());
    return absl::OkStatus();
  }
  return marked.status();
}

}  // namespace

absl::Status RunDistributedTask(const df::TaskConfig& task,
                                const Flags& flags) {
  // Checked before the server starts, so that a wrong job fails fast.
  absl::StatusOr<Replica> replica;
  if (task.job_name != "ps") {
    replica = ReplicaOf(task);
    if (!replica.ok()) return replica.status();
  }
  df::ServerOptions server_options;
  server_options.inter_op_threads = flags.threads;
  server_options.intra_op_threads = flags.threads;
  auto server = df::Server::Create(task.cluster, task.job_name, task.task_index,
                                   server_options);
  if (!server.ok()) return server.status();
  if (task.job_name == "ps") return (*server)->Join();
  return RunReplica(task, *replica, flags, (*server)->target());
}

}  // namespace fashion_mnist
