#include "tools/distflow/server_command.h"

#include <poll.h>
#include <signal.h>

#include <atomic>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "distflow/cluster.h"
#include "distflow/server.h"
#include "tools/distflow/exit_code.h"
#include "tools/distflow/stop_signals.h"

namespace distflow {
namespace tools {
namespace {

struct ServerFlags {
  std::string job_name;
  int task_index = 0;
  std::string ps_hosts;
  std::string worker_hosts;
  std::string cluster_spec;
  ServerOptions options;
  // Which of the seeds' flags were given (CLI11 knows after parsing).
  CLI::Option* job_name_option = nullptr;
  CLI::Option* task_index_option = nullptr;
  CLI::Option* ps_hosts_option = nullptr;
  CLI::Option* worker_hosts_option = nullptr;
  // Slurm: the number of ps ranks, and the port of each node's first task.
  int ps_count = 0;
  int port = 0;
  CLI::Option* ps_count_option = nullptr;
  CLI::Option* port_option = nullptr;
};

constexpr char kSummary[] =
    "Runs the server of one task (such as a ps task) until the job is done";

constexpr char kDetails[] =
    "Runs the server of one task of a cluster until the job is done: for\n"
    "tasks that run no program of their own, such as ps tasks. The task\n"
    "comes from the seeds' flags, from --cluster_spec with --job_name and\n"
    "--task_index, under Slurm's srun from its variables with --ps_count,\n"
    "or, without flags, from the TF_CONFIG environment variable.";

constexpr char kFooter[] =
    "Examples:\n"
    "  distflow server --job_name=ps --task_index=0 \\\n"
    "      --ps_hosts=10.0.0.1:2222 "
    "--worker_hosts=10.0.0.2:2222,10.0.0.3:2222\n"
    "  distflow server --cluster_spec=cluster.json --job_name=ps "
    "--task_index=1\n"
    "  TF_CONFIG='{\"cluster\": {...}, \"task\": {\"type\": \"ps\", "
    "\"index\": 0}}' distflow server\n"
    "  distflow server --ps_count=2   # a ps rank (0 or 1) of an srun job\n"
    "\n"
    "Exit status: 0 when the job is done (the chief called EndJob or\n"
    "ShutdownTask) or on SIGTERM (a clean stop requested by a launcher or\n"
    "an orchestrator); 130 on SIGINT and 129 on SIGHUP (as shells report\n"
    "them); 1 if the server fails (its port is in use); 2 for a wrong\n"
    "command line (a bad flag, a task that is not in the cluster).";

// The task from --cluster_spec, else from the seeds' flags, Slurm's variables
// or TF_CONFIG (as every distflow program reads them).
absl::StatusOr<TaskConfig> ResolveTask(const ServerFlags& flags) {
  if (!flags.cluster_spec.empty()) {
    TaskConfig task;
    auto cluster = ClusterSpec::FromJsonFile(flags.cluster_spec);
    if (!cluster.ok()) return cluster.status();
    task.cluster = *std::move(cluster);
    if (flags.job_name.empty()) {
      return absl::InvalidArgumentError(
          "--cluster_spec needs --job_name (and --task_index unless 0)");
    }
    task.job_name = flags.job_name;
    task.task_index = flags.task_index;
    auto address = task.cluster.TaskAddress(task.job_name, task.task_index);
    if (!address.ok()) return address.status();
    return task;
  }
  std::vector<std::string> args = {"distflow server"};
  auto add = [&args](const CLI::Option* option, const std::string& flag,
                     const std::string& value) {
    if (option->count() > 0)
      args.push_back(absl::StrCat("--", flag, "=", value));
  };
  add(flags.job_name_option, "job_name", flags.job_name);
  add(flags.task_index_option, "task_index", std::to_string(flags.task_index));
  add(flags.ps_hosts_option, "ps_hosts", flags.ps_hosts);
  add(flags.worker_hosts_option, "worker_hosts", flags.worker_hosts);
  add(flags.ps_count_option, "ps_count", std::to_string(flags.ps_count));
  add(flags.port_option, "port", std::to_string(flags.port));
  // The argv form reads this process's environment (TF_CONFIG, SLURM_*).
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  return ParseTaskConfig(static_cast<int>(argv.size()), argv.data());
}

// Turns SIGINT, SIGTERM and SIGHUP into Server::Stop: StopSignals' handler
// writes each signal to a pipe, which a watcher thread polls. A handler,
// unlike a blocked signal taken by sigwait, works whichever thread the kernel
// delivers the signal to (gRPC's threads included).
class SignalWatcher {
 public:
  ~SignalWatcher() { StopWatching(); }

  // Starts watching: the first signal stops `server`.
  void Watch(Server* server) {
    if (signals_.fd() < 0) return;  // no pipe: signals keep their default
    thread_ = std::thread([this, server] {
      while (!done_) {
        pollfd ready = {signals_.fd(), POLLIN, 0};
        if (poll(&ready, 1, /*timeout_ms=*/100) <= 0) continue;
        const std::vector<int> received = signals_.Take();
        if (received.empty()) continue;
        signal_ = received.front();
        (void)server->Stop();
        return;
      }
    });
  }
  // Ends the watcher thread: after this no signal touches the server, which
  // may then be destroyed.
  void StopWatching() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // The signal that stopped the server; 0 if none.
  int stop_signal() const { return signal_; }

 private:
  StopSignals signals_;
  std::thread thread_;
  std::atomic<bool> done_{false};
  std::atomic<int> signal_{0};
};

int RunServer(const ServerFlags& flags) {
  auto task = ResolveTask(flags);
  if (!task.ok()) {
    std::cerr << "distflow server: " << task.status().message()
              << "\nRun 'distflow server --help' for the flags.\n";
    return kExitUsage;
  }
  if (!task->cluster.HasJob(task->job_name)) {
    // TF_CONFIG lets an evaluator run beside the cluster, outside it.
    std::cerr << "distflow server: job '" << task->job_name
              << "' is not in the cluster (" << task->cluster.JobSummary()
              << "): its tasks run beside the cluster and need no server\n";
    return kExitUsage;
  }
  SignalWatcher watcher;
  auto server = Server::Create(task->cluster, task->job_name, task->task_index,
                               flags.options);
  if (!server.ok()) {
    std::cerr << "distflow server: " << server.status() << "\n";
    return absl::IsInvalidArgument(server.status()) ? kExitUsage : kExitFailure;
  }
  watcher.Watch(server->get());
  std::cout << "distflow server: task " << task->TaskDevice() << " serving on "
            << (*server)->target() << ", cluster "
            << task->cluster.DebugString() << std::endl;
  const absl::Status joined = (*server)->Join();
  watcher.StopWatching();
  if (!joined.ok()) {
    std::cerr << "distflow server: task " << task->TaskDevice()
              << " stopped with an error: " << joined << "\n";
    return kExitFailure;
  }
  const int signo = watcher.stop_signal();
  std::cout << "distflow server: task " << task->TaskDevice() << " stopped"
            << (signo == 0 ? ": the job is done"
                           : absl::StrCat(" by ", strsignal(signo)))
            << std::endl;
  // SIGTERM is how launchers and orchestrators ask for a normal stop; an
  // interrupt (or a hangup) exits as shells report a signal, 128 + N.
  return signo == 0 || signo == SIGTERM ? kExitOk : 128 + signo;
}

}  // namespace

void AddServerCommand(CLI::App& app) {
  auto flags = std::make_shared<ServerFlags>();
  CLI::App* cmd = app.add_subcommand("server", kSummary);
  // CLI11 prints the footer after the flags: the details, then examples.
  cmd->footer(absl::StrCat(kDetails, "\n\n", kFooter));
  flags->job_name_option =
      cmd->add_option("--job_name", flags->job_name,
                      "This task's job: ps, worker, chief or evaluator");
  flags->task_index_option =
      cmd->add_option("--task_index", flags->task_index,
                      "This task's index in its job (default 0)")
          ->check(CLI::NonNegativeNumber);
  flags->ps_hosts_option = cmd->add_option(
      "--ps_hosts", flags->ps_hosts, "The ps tasks: host:port,host:port,...");
  flags->worker_hosts_option =
      cmd->add_option("--worker_hosts", flags->worker_hosts,
                      "The worker tasks: host:port,host:port,...");
  CLI::Option* cluster_spec =
      cmd->add_option("--cluster_spec", flags->cluster_spec,
                      "A JSON file {\"ps\": [\"host:port\", ...], \"worker\": "
                      "[...]} instead of --ps_hosts and --worker_hosts")
          ->excludes(flags->ps_hosts_option)
          ->excludes(flags->worker_hosts_option);
  flags->ps_count_option =
      cmd->add_option("--ps_count", flags->ps_count,
                      "Under Slurm's srun: the first N ranks are ps tasks, "
                      "the others workers")
          ->check(CLI::PositiveNumber)
          ->excludes(cluster_spec);
  flags->port_option =
      cmd->add_option("--port", flags->port,
                      "With --ps_count: the port of each node's first task "
                      "(default 2222; the node's next tasks take the next "
                      "ports)")
          ->check(CLI::Range(1, 65535))
          ->needs(flags->ps_count_option);
  cmd->add_option("--inter_op_threads", flags->options.inter_op_threads,
                  "Threads that run independent ops (0: one per core)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--intra_op_threads", flags->options.intra_op_threads,
                  "Threads one op may use (0: one per core)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--remote_session_timeout_ms",
                  flags->options.remote_session_timeout_ms,
                  "Close the session of a client in another process once it "
                  "has been silent this long (0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->callback([flags] { ExitWith(RunServer(*flags)); });
}

}  // namespace tools
}  // namespace distflow
