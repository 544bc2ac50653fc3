#include "tools/distflow/local_command.h"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/distflow/cluster_layout.h"
#include "tools/distflow/console.h"
#include "tools/distflow/free_ports.h"
#include "tools/distflow/line_prefixer.h"
#include "tools/distflow/progress_line.h"
#include "tools/distflow/supervisor.h"

namespace distflow {
namespace tools {
namespace {

constexpr const char* kDescription =
    "Runs a cluster of PROGRAM on this machine: one process per ps task and "
    "per worker, on free ports of 127.0.0.1, until the job is done.";

constexpr const char* kFooter = R"(
Every task runs PROGRAM ARGS... followed by the seeds' flags
  --job_name=ps|worker --task_index=I --ps_hosts=H:P,... --worker_hosts=H:P,...
and with the environment variable TF_CONFIG set to
  {"cluster": {"ps": [...], "worker": [...]}, "task": {"type": "worker", "index": I}}
With --chief the cluster also has a "chief" job of one task, and the tasks get
only TF_CONFIG (the seeds' flags cannot name a chief job).

Each line of output is prefixed with its task (ps0, worker1, chief). A line of
the chief (worker0 without --chief) of the form
  progress step=250/6000 loss=0.4123 examples_per_sec=1834
feeds one status line with the step, loss, speed and time left (on a terminal;
elsewhere such lines are printed as they are). The last step comes from the
line, or from --train_steps among ARGS.

Exit status: the chief's. When another task fails first (a non-zero exit or a
signal), distflow local names it, says how it ended, shows its last lines,
stops the rest and exits with that task's status (128+N for signal N).
Ctrl-C (SIGINT) or SIGTERM sends SIGTERM to every task, then SIGKILL after
--grace_period seconds (or at once on a second Ctrl-C), and exits with 130
(143 for SIGTERM). Once the workers are done, ps tasks that do not exit by
themselves within --ps_wait seconds are stopped.

Example:
  distflow local --ps=1 --workers=2 -- ./build/bin/fashion_mnist --train_steps=3000
)";

struct LocalFlags {
  int ps = 1;
  int workers = 2;
  bool chief = false;
  std::string log_dir;
  double grace_period = 5;
  double ps_wait = 10;
  std::vector<std::string> program;
};

int RunLocal(const LocalFlags& flags) {
  LocalClusterOptions cluster;
  cluster.ps = flags.ps;
  cluster.workers = flags.workers;
  cluster.chief = flags.chief;
  cluster.program = flags.program;
  auto ports = PickFreePorts(cluster.host, NumTasks(cluster));
  if (!ports.ok()) {
    std::fprintf(stderr, "distflow local: %s\n",
                 std::string(ports.status().message()).c_str());
    return 1;
  }
  auto tasks = LayOutLocalCluster(cluster, *ports);
  if (!tasks.ok()) {
    std::fprintf(stderr, "distflow local: %s\n",
                 std::string(tasks.status().message()).c_str());
    return 1;
  }
  std::string layout = "distflow local:";
  for (size_t i = 0; i < tasks->size(); ++i) {
    absl::StrAppend(&layout, i == 0 ? " " : ", ", (*tasks)[i].name, " ",
                    cluster.host, ":", (*ports)[i]);
  }
  std::fprintf(stderr, "%s\n", layout.c_str());

  SupervisorOptions options;
  options.tasks = *std::move(tasks);
  options.chief = ChiefTaskName(cluster);
  options.default_last_step = TrainStepsFlag(flags.program);
  options.grace_secs = flags.grace_period;
  options.ps_exit_secs = flags.ps_wait;
  options.log_dir = flags.log_dir;
  options.colour = ShouldColour(STDOUT_FILENO);
  Console console(stdout, stderr, isatty(STDOUT_FILENO) == 1);
  return RunLocalCluster(options, &console);
}

}  // namespace

void AddLocalCommand(CLI::App& app) {
  auto flags = std::make_shared<LocalFlags>();
  CLI::App* local = app.add_subcommand("local", kDescription);
  local->footer(kFooter);
  local->add_option("--ps", flags->ps, "number of ps tasks")
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  local->add_option("--workers", flags->workers, "number of workers")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  local->add_flag("--chief", flags->chief,
                  "add a \"chief\" job of one task, which leads the job");
  local->add_option("--log_dir", flags->log_dir,
                    "also write each task's output to LOG_DIR/<task>.log");
  local
      ->add_option("--grace_period", flags->grace_period,
                   "seconds a task has to exit after SIGTERM before SIGKILL")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  local
      ->add_option("--ps_wait", flags->ps_wait,
                   "seconds the ps tasks have to exit by themselves once every "
                   "worker has finished, before they are stopped")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  local
      ->add_option("program", flags->program,
                   "PROGRAM ARGS...: what every task runs, after --")
      ->required();
  local->callback([flags] { throw CLI::RuntimeError(RunLocal(*flags)); });
}

}  // namespace tools
}  // namespace distflow
