// Runs the tasks of a local cluster to the end: starts them, shows their
// output, follows the chief's progress, and stops them all when the job is
// over, when a task fails, or on Ctrl-C.
#ifndef DISTFLOW_TOOLS_DISTFLOW_SUPERVISOR_H_
#define DISTFLOW_TOOLS_DISTFLOW_SUPERVISOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tools/distflow/cluster_layout.h"
#include "tools/distflow/console.h"

namespace distflow {
namespace tools {

struct SupervisorOptions {
  std::vector<TaskSpec> tasks;
  // The task whose exit status is the job's and whose progress lines feed
  // the status line.
  std::string chief;
  // The last step for the ETA when progress lines do not carry it.
  int64_t default_last_step = 0;
  // How long a task may take to exit after SIGTERM before it gets SIGKILL.
  double grace_secs = 5;
  // How long the ps tasks may take to exit by themselves once every worker
  // has finished, before they are stopped.
  double ps_exit_secs = 10;
  // When not empty, each task's output also goes to <log_dir>/<task>.log.
  std::string log_dir;
  bool colour = false;
  // Lines of output quoted when a task fails.
  int tail_lines = 10;
};

// Runs the job and returns the launcher's exit status:
// - the chief's exit code once it and the other workers have exited;
// - when another task fails first (exits non-zero or is killed by a signal),
//   its exit code, or 128 + the signal's number, after reporting which task
//   failed, how, and its last lines, and stopping the others;
// - 128 + the signal's number after SIGINT or SIGTERM to the launcher, which
//   sends SIGTERM to every task, then SIGKILL after the grace period (or at
//   once on a second Ctrl-C);
// - 1 when a task cannot be started or a log file cannot be written.
int RunLocalCluster(const SupervisorOptions& options, Console* console);

}  // namespace tools
}  // namespace distflow

#endif  // DISTFLOW_TOOLS_DISTFLOW_SUPERVISOR_H_
