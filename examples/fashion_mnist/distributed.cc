#include "examples/fashion_mnist/distributed.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "distflow/distflow.h"
#include "examples/example_util.h"
#include "examples/fashion_mnist/done_reports.h"

namespace fashion_mnist {

namespace df = distflow;

namespace {

// How long a worker waits for the ps tasks to start and the chief to
// initialize the model, and how long a session recovers from a ps restart
// before it gives up.
constexpr int kStartupSeconds = 120;

// This task's place among the training replicas: the chief job's task (if the
// cluster has one) first, then the workers in index order.
struct Replica {
  int index = 0;
  int count = 0;
  bool is_chief = false;
  std::string name;  // "worker 1", for logs
};

// The names of all replicas, in replica order.
std::vector<std::string> ReplicaNames(const df::ClusterSpec& cluster) {
  std::vector<std::string> names;
  for (const char* job : {"chief", "worker"}) {
    for (int i = 0; i < cluster.num_tasks(job); ++i) {
      names.push_back(absl::StrCat(job, " ", i));
    }
  }
  return names;
}

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
  // The sessions' init op, ready op and saver: over the model and the
  // optimizer's state, not the done flags (see done_reports.h).
  df::Operation init_op;
  df::Output ready_op;
  std::shared_ptr<df::train::Saver> saver;
  DoneFlags done;
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
  g.init_op = df::ops::GlobalVariablesInitializer(root);
  g.ready_op = df::ops::ReportUninitializedVariables(
      root, df::ops::GlobalVariables(root));
  g.done = MakeDoneFlags(s, ReplicaNames(task.cluster));
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

// The accuracy on `test`, through `session`: after a ps restart it is
// evaluated again from the first batch, on the restored model.
absl::StatusOr<double> EvaluateRecovering(
    df::train::RecoverableSession* session, const Model& m,
    const df::data::LabeledImages& test) {
  double accuracy = 0;
  absl::Status s = session->RunStep([&](df::ClientSession* step_session) {
    auto evaluated = Evaluate(step_session, m, test);
    if (evaluated.ok()) accuracy = *evaluated;
    return evaluated.status();
  });
  if (!s.ok()) return s;
  return accuracy;
}

// Trains until the stop hook ends the session at the last global step;
// returns the local steps and the last global step seen. The chief validates on
// `test` through `side`, a session beside the monitored one (no hooks, no step
// counted), which, like it, recovers from a ps restart.
absl::StatusOr<std::pair<int64_t, int64_t>> TrainReplica(
    df::train::MonitoredTrainingSession* session,
    df::train::RecoverableSession* side, const ReplicaGraph& g,
    const Flags& flags, const Replica& replica,
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
      auto accuracy = EvaluateRecovering(side, m, *test);
      if (!accuracy.ok()) return accuracy.status();
      std::printf("global_step=%lld validation_accuracy=%.4f\n",
                  static_cast<long long>(global_step), *accuracy);
      std::fflush(stdout);
    }
  }
  return std::make_pair(local_steps, global_step);
}

void PrintStop(const Replica& replica, int64_t local_steps,
               int64_t global_step) {
  std::printf("%s: local_steps=%lld, stopped at global_step=%lld\n",
              replica.name.c_str(), static_cast<long long>(local_steps),
              static_cast<long long>(global_step));
  std::fflush(stdout);
}

// The chief's end, after its monitored session has closed (and saved the
// last checkpoint): reads the last global step, evaluates, waits for the
// other workers and ends the job. Through `side`, so a ps restart in the
// meantime costs a restore of that checkpoint, not the job.
absl::Status FinishAsChief(df::train::RecoverableSession* side,
                           const ReplicaGraph& g, const Replica& replica,
                           const df::TaskConfig& task, int64_t local_steps,
                           const df::data::LabeledImages& test) {
  auto last = side->Run({g.model.global_step});
  if (!last.ok()) return last.status();
  PrintStop(replica, local_steps, (*last)[0].scalar<int64_t>());
  auto accuracy = EvaluateRecovering(side, g.model, test);
  if (!accuracy.ok()) return accuracy.status();
  std::printf("test_accuracy=%.4f\n", *accuracy);
  std::fflush(stdout);
  return EndJobWhenOthersAreDone(side, g.done, task.cluster);
}

// Another worker's end: reports done and keeps the report until the job
// ends. The last global step is read through a plain session: a worker has
// nothing to restore, and a read that fails (the job has ended and the ps
// tasks are gone, or one restarted) is no failure of the job: the step seen
// last is printed then.
absl::Status FinishAsWorker(const df::Scope& root, const std::string& target,
                            const ReplicaGraph& g, const Replica& replica,
                            int64_t local_steps, int64_t global_step) {
  df::SessionOptions options;
  options.target = target;
  auto control = df::ClientSession::Create(root, options);
  if (!control.ok()) return control.status();
  auto last = (*control)->Run({g.model.global_step});
  (void)(*control)->Close();
  if (last.ok()) {
    global_step = (*last)[0].scalar<int64_t>();
  } else {
    std::fprintf(stderr, "%s: could not read the last global step: %s\n",
                 replica.name.c_str(), last.status().ToString().c_str());
  }
  PrintStop(replica, local_steps, global_step);
  return ReportDoneUntilTheJobEnds(root, target, g.done, replica.index,
                                   replica.name);
}

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
  const int64_t last_step = flags.StepsFor(train->images.dim_size(0));
  df::train::MonitoredTrainingSession::Options mts;
  mts.master = target;
  mts.is_chief = replica.is_chief;
  mts.checkpoint_dir = flags.checkpoint_dir;
  mts.save_checkpoint_steps = flags.save_checkpoint_steps;
  mts.scaffold.init_op = graph->init_op;
  mts.scaffold.ready_op = graph->ready_op;
  mts.scaffold.saver = graph->saver;
  mts.max_wait_secs = kStartupSeconds;
  if (graph->model.sync != nullptr) {
    mts.hooks.push_back(
        graph->model.sync->MakeSessionRunHook(replica.is_chief));
  }
  mts.hooks.push_back(df::train::StopAtStepHook::Create(last_step));
  // The chief's session for what must not count as a training step or run
  // the hooks: validation and the end of the job.
  std::unique_ptr<df::train::RecoverableSession> side;
  if (replica.is_chief) {
    auto created = df::train::RecoverableSession::Create(root, mts);
    if (!created.ok()) return created.status();
    side = *std::move(created);
  }
  auto session = df::train::MonitoredTrainingSession::Create(root, mts);
  if (!session.ok()) return session.status();
  auto steps = TrainReplica(session->get(), side.get(), *graph, flags, replica,
                            *train, replica.is_chief ? &test : nullptr);
  if (!steps.ok()) return steps.status();
  // On the chief: saves the last checkpoint (with --checkpoint_dir).
  if (absl::Status s = (*session)->Close(); !s.ok()) return s;
  if (replica.is_chief) {
    return FinishAsChief(side.get(), *graph, replica, task, steps->first, test);
  }
  return FinishAsWorker(root, target, *graph, replica, steps->first,
                        steps->second);
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
