// Distributed training throughput of the Fashion-MNIST MLP (784-256-128-10,
// Adam, batch 100), every task a process on 127.0.0.1:
//  - 1 ps + 2 workers, asynchronous: distflow (variables on the ps by the
//    replica device setter, each worker running the whole training step
//    through its own task's master) against a PyTorch RPC parameter server
//    (bench/peers/torch_rpc_ps.py: the ps holds the parameters and Adam; each
//    trainer pulls the parameters, computes gradients, pushes them);
//  - the same synchronous: SyncReplicasOptimizer (one gradient of each
//    worker averaged per global step) against the PyTorch ps averaging both
//    trainers' gradients per step;
//  - the cost of distribution: 1 ps + 1 worker against one process training
//    the same model at the same batch size, the ps and the worker each with
//    as many threads as the one process (--local_threads), as each would
//    have by default.
// A setup's examples/sec is the sum of its workers' rates over their
// measured steps (after a warm-up), on both sides; each side runs --repeats
// times, alternating with the other, and its best run counts. Every run is
// a child process (or processes) of an idle parent, the one-process side
// too.
//
//   build/bench/dist_train_bench [--steps N] [--repeats R]
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench_util.h"
#include "distflow/data.h"
#include "distflow/distflow.h"
#include "examples/fashion_mnist/model.h"
#include "nlohmann/json.hpp"

#ifndef DISTFLOW_BENCH_DIR
#error "DISTFLOW_BENCH_DIR must name the bench/ source folder"
#endif

namespace df = distflow;

namespace {

constexpr int64_t kBatch = 100;
constexpr int64_t kBatches = 50;  // the same 50 batches as the peer, cycled

struct Config {
  int64_t steps = 300;  // measured steps per worker
  int64_t warmup = 30;
  int worker_threads = 1;  // of each worker's server (1 ps + 2 workers)
  int ps_threads = 1;
  // Of the single-process session, and of the ps's and the worker's servers
  // that replace it in the cost row.
  int local_threads = 2;
  int repeats = 2;    // alternating runs of each side; the best counts
  bool sync = false;  // of a worker process: SyncReplicasOptimizer
  int ps_pid = 0;     // of a worker process: the ps task, for its CPU time
  std::string rows = "async,cost,sync";  // which comparisons to run
};

// The CPU time that this process and the ps task spend per step: on two
// cores it bounds the step rate where wall time swings with the load.
struct CpuClock {
  // `self_name` labels this process's figure ("worker", "one_process").
  CpuClock(int ps_pid, std::string self_name)
      : ps_pid(ps_pid),
        self_name(std::move(self_name)),
        self(bench::CpuSeconds(getpid())),
        ps(ps_pid > 0 ? bench::CpuSeconds(ps_pid) : 0) {}
  // " worker_cpu_ms_per_step=... ps_cpu_ms_per_step=..."
  std::string PerStep(int64_t steps) const {
    std::string out =
        absl::StrFormat(" %s_cpu_ms_per_step=%.3f", self_name,
                        (bench::CpuSeconds(getpid()) - self) * 1e3 / steps);
    if (ps_pid > 0) {
      absl::StrAppendFormat(&out, " ps_cpu_ms_per_step=%.3f",
                            (bench::CpuSeconds(ps_pid) - ps) * 1e3 / steps);
    }
    return out;
  }
  int ps_pid;
  std::string self_name;
  double self, ps;
};

// One training step of the MLP on batch `i` of the first kBatches.
// `Session` is a ClientSession or a MonitoredTrainingSession.
template <typename Session>
absl::Status Step(Session* session, const fashion_mnist::Model& m,
                  const df::data::LabeledImages& d, int64_t i) {
  const int64_t k = i % kBatches;
  return session
      ->Run({{m.images, d.images.Slice(k * kBatch, (k + 1) * kBatch)},
             {m.labels, d.labels.Slice(k * kBatch, (k + 1) * kBatch)},
             {m.dropout_rate, df::Tensor::Scalar(0.0f)}},
            {}, {m.train})
      .status();
}

// Warm-up, then `config.steps` timed steps starting at batch `first`;
// examples/sec.
// `cpu`, if not null, gets the CPU time per timed step (CpuClock::PerStep).
template <typename Session>
absl::StatusOr<double> TimeSteps(Session* session,
                                 const fashion_mnist::Model& m,
                                 const df::data::LabeledImages& d,
                                 int64_t first, const Config& config,
                                 std::string* cpu = nullptr,
                                 const std::string& cpu_name = "worker") {
  for (int64_t i = 0; i < config.warmup; ++i) {
    if (absl::Status s = Step(session, m, d, first + i); !s.ok()) return s;
  }
  const CpuClock clock(config.ps_pid, cpu_name);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < config.steps; ++i) {
    absl::Status s = Step(session, m, d, first + config.warmup + i);
    if (!s.ok()) return s;
  }
  const double rate = config.steps * kBatch / bench::Seconds(start);
  if (cpu != nullptr) *cpu = clock.PerStep(config.steps);
  return rate;
}

// The one-process side, as a process of its own: trains the model in one
// session and prints examples_per_sec= and its CPU time per step.
int RunOneProcess(const Config& config) {
  auto fail = [](const absl::Status& s) {
    std::printf("one process: %s\n", s.ToString().c_str());
    return 1;
  };
  auto data = df::data::LoadFashionMnist(df::data::Split::kTrain);
  if (!data.ok()) return fail(data.status());
  df::Scope root = df::Scope::NewRootScope();
  auto m = fashion_mnist::BuildModel(root, {});
  if (!m.ok()) return fail(m.status());
  df::SessionOptions options;
  options.intra_op_threads = config.local_threads;
  options.inter_op_threads = config.local_threads;
  auto session = df::ClientSession::Create(root, options);
  if (!session.ok()) return fail(session.status());
  if (absl::Status s = (*session)->RunTargets({m->init}); !s.ok()) {
    return fail(s);
  }
  std::string cpu;
  auto rate =
      TimeSteps(session->get(), *m, *data, 0, config, &cpu, "one_process");
  if (!rate.ok()) return fail(rate.status());
  std::printf("examples_per_sec=%.1f%s\n", *rate, cpu.c_str());
  return 0;
}

// Synchronous training until the job ends: the chief stops at global step
// warmup + steps and ends the job (EndJob), and a step refused after that
// (OUT_OF_RANGE: the token queue closed, or the ps ended) ends this worker's
// loop. Examples/sec over the steps after the warm-up.
absl::StatusOr<double> TimeSyncSteps(
    df::train::MonitoredTrainingSession* session, const fashion_mnist::Model& m,
    const df::data::LabeledImages& d, int64_t first, const Config& config) {
  auto start = std::chrono::steady_clock::now();
  int64_t steps = 0, timed = 0;
  while (!session->ShouldStop()) {
    absl::Status s = Step(session, m, d, first + steps);
    if (absl::IsOutOfRange(s)) break;
    if (!s.ok()) return s;
    if (++steps == config.warmup) {
      start = std::chrono::steady_clock::now();
    } else if (steps > config.warmup) {
      ++timed;
    }
  }
  if (timed == 0) {
    return absl::InternalError(
        absl::StrCat("the synchronous job ended after ", steps,
                     " steps of this worker, within its warm-up"));
  }
  return timed * kBatch / bench::Seconds(start);
}

// A synchronous worker: SyncReplicasOptimizer needs a monitored session for
// its hook (the chief's aggregation), which also initializes the model or
// waits for it.
absl::StatusOr<double> RunSyncWorker(const df::ClusterSpec& cluster, int index,
                                     const std::string& target,
                                     const df::Scope& root,
                                     const fashion_mnist::Model& m,
                                     const df::data::LabeledImages& d,
                                     int64_t first, const Config& config) {
  df::train::MonitoredTrainingSession::Options mts;
  mts.master = target;
  mts.is_chief = index == 0;
  mts.max_wait_secs = 120;
  mts.log_step_count_steps = 0;
  mts.hooks.push_back(m.sync->MakeSessionRunHook(index == 0));
  mts.hooks.push_back(
      df::train::StopAtStepHook::Create(config.warmup + config.steps));
  mts.on_training_end = [&] { return df::EndJob(cluster); };
  auto session = df::train::MonitoredTrainingSession::Create(root, mts);
  if (!session.ok()) return session.status();
  auto rate = TimeSyncSteps(session->get(), m, d, first, config);
  if (!rate.ok()) return rate.status();
  if (absl::Status s = (*session)->Close(); !s.ok()) return s;
  return rate;
}

// A worker process: trains on the cluster and prints examples_per_sec=.
int RunWorker(const df::ClusterSpec& cluster, int index, const Config& config) {
  auto fail = [index](const absl::Status& s) {
    std::printf("worker %d: %s\n", index, s.ToString().c_str());
    return 1;
  };
  auto data = df::data::LoadFashionMnist(df::data::Split::kTrain);
  if (!data.ok()) return fail(data.status());
  df::ServerOptions server_options;
  server_options.inter_op_threads = config.worker_threads;
  server_options.intra_op_threads = config.worker_threads;
  auto server = df::Server::Create(cluster, "worker", index, server_options);
  if (!server.ok()) return fail(server.status());
  df::Scope root = df::Scope::NewRootScope();
  df::Scope s = root.WithDeviceFunction(df::ReplicaDeviceSetter(
      cluster, absl::StrCat("/job:worker/task:", index)));
  fashion_mnist::ModelOptions model_options;
  if (config.sync) model_options.sync_replicas = cluster.num_tasks("worker");
  auto m = fashion_mnist::BuildModel(s, model_options);
  if (!m.ok()) return fail(m.status());
  const int64_t first = index * kBatches / cluster.num_tasks("worker");
  if (config.sync) {
    auto rate = RunSyncWorker(cluster, index, (*server)->target(), root, *m,
                              *data, first, config);
    if (!rate.ok()) return fail(rate.status());
    std::printf("examples_per_sec=%.1f\n", *rate);
    return 0;
  }
  df::SessionOptions options;
  options.target = (*server)->target();
  auto session = df::ClientSession::Create(root, options);
  if (!session.ok()) return fail(session.status());
  // Worker 0 initializes once the ps is up; the others wait until it has.
  std::vector<df::Output> initialized;
  for (const auto& var : df::ops::GlobalVariables(root)) {
    initialized.push_back(df::ops::IsVariableInitialized(s, var));
  }
  absl::Status ready;
  for (int attempt = 0; attempt < 600; ++attempt) {
    if (index == 0) {
      ready = (*session)->RunTargets({m->init});
    } else {
      auto out = (*session)->Run(initialized);
      ready = out.status();
      for (size_t i = 0; ready.ok() && i < out->size(); ++i) {
        if (!(*out)[i].scalar<bool>())
          ready = absl::UnavailableError("not initialized yet");
      }
    }
    if (!absl::IsUnavailable(ready)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!ready.ok()) return fail(ready);
  std::string cpu;
  auto rate = TimeSteps(session->get(), *m, *data, first, config, &cpu);
  if (!rate.ok()) return fail(rate.status());
  std::printf("examples_per_sec=%.1f%s\n", *rate, cpu.c_str());
  return 0;
}

// Output of `command` (stdout and stderr) and whether it exited 0.
struct CommandResult {
  std::string output;
  bool ok = false;
};
std::unique_ptr<FILE, int (*)(FILE*)> Start(const std::string& command) {
  return {popen((command + " 2>&1").c_str(), "r"), pclose};
}
CommandResult Finish(std::unique_ptr<FILE, int (*)(FILE*)> pipe) {
  CommandResult r;
  if (pipe == nullptr) return r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe.get())) {
    r.output.append(buf, n);
  }
  r.ok = pclose(pipe.release()) == 0;
  return r;
}

std::string SelfPath() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  return n > 0 ? std::string(path, n) : "dist_train_bench";
}

// The examples_per_sec= that a child process of this binary printed; the
// rest of that line (its CPU time per step) is printed as `name`'s.
absl::StatusOr<double> ReportedRate(const CommandResult& r,
                                    const std::string& name) {
  constexpr char kKey[] = "examples_per_sec=";
  const size_t at = r.output.find(kKey);
  if (!r.ok || at == std::string::npos) {
    return absl::InternalError(absl::StrCat(name, " failed: ", r.output));
  }
  const size_t end = r.output.find('\n', at);
  std::printf("  %s: %s\n", name.c_str(),
              r.output.substr(at, end - at).c_str());
  return std::strtod(r.output.c_str() + at + sizeof(kKey) - 1, nullptr);
}

// distflow with one ps and `workers` workers, each a process whose server
// has `ps_threads` or `worker_threads` threads per pool.
absl::StatusOr<double> Distflow(int workers, bool sync, int ps_threads,
                                int worker_threads, const Config& config) {
  const std::string self = SelfPath();
  const std::string ps = absl::StrCat("127.0.0.1:", bench::PickFreePort());
  std::vector<std::string> hosts;
  for (int i = 0; i < workers; ++i) {
    hosts.push_back(absl::StrCat("127.0.0.1:", bench::PickFreePort()));
  }
  const std::string worker_hosts = absl::StrJoin(hosts, ",");
  bench::Child ps_task({self, "--role=ps", "--ps_hosts=" + ps,
                        "--worker_hosts=" + worker_hosts,
                        absl::StrCat("--ps_threads=", ps_threads)});
  const std::string common =
      absl::StrCat(" --ps_hosts=", ps, " --worker_hosts=", worker_hosts,
                   " --steps=", config.steps, " --warmup=", config.warmup,
                   " --worker_threads=", worker_threads, sync ? " --sync" : "",
                   " --ps_threads=", ps_threads, " --ps_pid=", ps_task.pid());
  std::vector<std::unique_ptr<FILE, int (*)(FILE*)>> pipes;
  for (int i = 0; i < workers; ++i) {
    pipes.push_back(
        Start(absl::StrCat(self, " --role=worker --task_index=", i, common)));
  }
  double total = 0;
  for (int i = 0; i < workers; ++i) {
    auto rate =
        ReportedRate(Finish(std::move(pipes[i])),
                     absl::StrCat("distflow worker ", i, " of ", workers));
    if (!rate.ok()) return rate.status();
    total += *rate;
  }
  return total;
}

// The one-process side in a process of its own, as the distributed side's
// tasks are: run in this process instead, it slowed the distributed runs
// that followed it by 5-10% (docs/benchmarks.md, "The benchmark's own
// process").
absl::StatusOr<double> OneProcess(const Config& config) {
  return ReportedRate(
      Finish(Start(absl::StrCat(SelfPath(), " --role=one_process --steps=",
                                config.steps, " --warmup=", config.warmup,
                                " --local_threads=", config.local_threads))),
      "distflow, one process");
}

// The PyTorch RPC parameter server with `trainers` trainer processes.
absl::StatusOr<double> Torch(int trainers, bool sync, const Config& config) {
  const std::string command = absl::StrCat(
      "cd ", DISTFLOW_BENCH_DIR, "/peers && OPENBLAS_NUM_THREADS=1 ",
      "/usr/bin/python3 torch_rpc_ps.py --port ", bench::PickFreePort(),
      " --trainers ", trainers, sync ? " --sync" : "", " --steps ",
      config.steps, " --warmup ", config.warmup, " 2>/dev/null");
  CommandResult r = Finish(Start(command));
  auto json = nlohmann::json::parse(
      r.output.substr(
          r.output.rfind('{') == std::string::npos ? 0 : r.output.rfind('{')),
      nullptr, /*allow_exceptions=*/false);
  if (!r.ok || json.is_discarded() || !json.contains("examples_per_sec")) {
    return absl::UnavailableError(absl::StrCat(
        "the PyTorch RPC peer failed (is python3-torch installed? run "
        "scripts/install_deps.sh --bench): ",
        command, "\n", r.output));
  }
  return json["examples_per_sec"].get<double>();
}

// The best of `repeats` alternating pairs of runs of `ours` and `theirs`,
// printed as one row: alternating keeps a change of the machine's load from
// favouring one side. Each run prints the share of CPU time the host stole
// meanwhile (bench::StealMeter); a pair in which either run lost more than
// bench::kQuietStealShare counts only if no pair was quiet, and up to
// bench::kExtraRoundsForSteal more pairs are run to find quiet ones.
bool CompareRow(const std::string& setup,
                const std::function<absl::StatusOr<double>()>& ours,
                const std::string& peer,
                const std::function<absl::StatusOr<double>()>& theirs,
                int repeats) {
  struct Best {
    double ours = 0, theirs = 0;
  };
  bench::QuietRounds<Best> pairs(repeats);
  while (pairs.WantsAnother()) {
    double rates[2] = {0, 0};
    double stolen = 0;  // the more of the two runs'
    int side = 0;
    for (auto [run, name] :
         {std::pair{&ours, &setup}, std::pair{&theirs, &peer}}) {
      const bench::StealMeter steal;
      absl::StatusOr<double> rate = (*run)();
      if (!rate.ok()) {
        std::fprintf(stderr, "dist_train_bench: %s: %s\n", setup.c_str(),
                     rate.status().ToString().c_str());
        return false;
      }
      const double share = steal.Share();
      std::printf("  %s: %.0f examples/s, %.0f%% of the CPU time stolen\n",
                  name->c_str(), *rate, 100 * share);
      stolen = std::max(stolen, share);
      rates[side++] = *rate;
    }
    pairs.Record(stolen, [&](Best* best) {
      best->ours = std::max(best->ours, rates[0]);
      best->theirs = std::max(best->theirs, rates[1]);
    });
  }
  const Best& best = pairs.best();
  std::printf(
      "%-30s %12.0f  %-24s %12.0f %7.2f%s\n", setup.c_str(), best.ours,
      peer.c_str(), best.theirs, best.ours / best.theirs,
      pairs.any_quiet() ? "" : "  (every pair lost CPU time to the host)");
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Config config;
  std::string role, ps_hosts, worker_hosts;
  int task_index = 0;
  CLI::App app{
      "Distributed MLP training examples/sec: distflow against a "
      "PyTorch RPC parameter server."};
  app.add_option("--steps", config.steps, "measured steps per worker")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  app.add_option("--warmup", config.warmup)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  app.add_option("--worker_threads", config.worker_threads,
                 "threads of each worker (rows of two workers)")
      ->check(CLI::Range(1, 64));
  app.add_option("--ps_threads", config.ps_threads,
                 "threads of the ps (rows of two workers)")
      ->check(CLI::Range(1, 64));
  app.add_option("--local_threads", config.local_threads,
                 "threads of the single-process session, and of the ps and "
                 "the worker that replace it (cost row)")
      ->check(CLI::Range(1, 64));
  app.add_option("--rows", config.rows,
                 "comparisons to run, of async,cost,sync (cost: 1 ps + 1 "
                 "worker against one process)");
  app.add_option("--repeats", config.repeats,
                 "alternating runs of each side (the best counts)")
      ->check(CLI::Range(1, 100));
  // The tasks of a measurement run as child processes of this binary.
  app.add_flag("--sync", config.sync)->group("");
  app.add_option("--role", role)
      ->group("")
      ->check(CLI::IsMember({"ps", "worker", "one_process"}));
  app.add_option("--task_index", task_index)->group("");
  app.add_option("--ps_pid", config.ps_pid)->group("");
  app.add_option("--ps_hosts", ps_hosts)->group("");
  app.add_option("--worker_hosts", worker_hosts)->group("");
  CLI11_PARSE(app, argc, argv);

  if (role == "one_process") return RunOneProcess(config);
  if (!role.empty()) {
    auto cluster = df::ClusterSpec::FromHostLists(ps_hosts, worker_hosts);
    if (!cluster.ok()) {
      std::printf("%s\n", cluster.status().ToString().c_str());
      return 1;
    }
    if (role == "worker") return RunWorker(*cluster, task_index, config);
    df::ServerOptions options;
    options.inter_op_threads = config.ps_threads;
    options.intra_op_threads = config.ps_threads;
    auto server = df::Server::Create(*cluster, "ps", 0, options);
    return server.ok() && (*server)->Join().ok() ? 0 : 1;
  }

  // Every measured run is a child process that loads the data itself; this
  // load only stops a benchmark without its dataset early, with the error.
  if (auto data = df::data::LoadFashionMnist(df::data::Split::kTrain);
      !data.ok()) {
    std::fprintf(stderr, "dist_train_bench: %s\n",
                 data.status().ToString().c_str());
    return 1;
  }
  std::printf("MLP 784-256-128-10, Adam, batch %lld, %lld steps per worker\n",
              static_cast<long long>(kBatch),
              static_cast<long long>(config.steps));
  std::printf("%-30s %12s  %-24s %12s %7s\n", "distflow setup", "examples/s",
              "peer", "examples/s", "ratio");
  auto wanted = [&](absl::string_view row) {
    return absl::StrCat(",", config.rows, ",")
               .find(absl::StrCat(",", row, ",")) != std::string::npos;
  };
  bool ok = true;
  if (wanted("async")) {
    ok &= CompareRow(
        "1 ps + 2 workers, async",
        [&] {
          return Distflow(2, false, config.ps_threads, config.worker_threads,
                          config);
        },
        "PyTorch RPC ps, async",
        [&] { return Torch(2, /*sync=*/false, config); }, config.repeats);
  }
  if (wanted("cost")) {
    ok &= CompareRow(
        "1 ps + 1 worker",
        [&] {
          return Distflow(1, false, config.local_threads, config.local_threads,
                          config);
        },
        "distflow, one process", [&] { return OneProcess(config); },
        config.repeats);
  }
  if (wanted("sync")) {
    ok &= CompareRow(
        "1 ps + 2 workers, sync",
        [&] {
          return Distflow(2, true, config.ps_threads, config.worker_threads,
                          config);
        },
        "PyTorch RPC ps, sync", [&] { return Torch(2, /*sync=*/true, config); },
        config.repeats);
  }
  return ok ? 0 : 1;
}
