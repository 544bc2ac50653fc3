// One task of a local cluster as a child process: started in its own process
// group (so that a signal reaches the task and anything it started), with
// stdout and stderr together on one pipe that the launcher polls, and killed
// by the kernel if the launcher itself dies.
#ifndef DISTFLOW_TOOLS_DISTFLOW_CHILD_PROCESS_H_
#define DISTFLOW_TOOLS_DISTFLOW_CHILD_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace distflow {
namespace tools {

class ChildProcess {
 public:
  // Starts `argv` (argv[0] is looked up in PATH unless it has a '/') with
  // this process's environment plus `env` (which replaces variables of the
  // same name) and stdin from /dev/null. Errors name the program: not found,
  // not executable, or out of processes.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(
      const std::vector<std::string>& argv,
      const std::vector<std::pair<std::string, std::string>>& env);

  // Kills the process group and reaps the child if it is still running.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }

  // The read end of the output pipe (non-blocking), or -1 once closed.
  int output_fd() const { return output_fd_; }

  // Reads what the pipe holds now into `out`. Returns false at end of
  // stream or on a read error, after closing the pipe.
  bool ReadAvailable(std::string* out);

  // Stops reading the output (a process the child started may keep the
  // pipe open after the child has exited).
  void CloseOutput();

  // Sends `signo` to the child's process group (nothing once reaped).
  void Signal(int signo);

  // Reaps the child if it has exited; its wait status once it has.
  std::optional<int> TryWait();
  std::optional<int> wait_status() const { return wait_status_; }

 private:
  ChildProcess(pid_t pid, int output_fd) : pid_(pid), output_fd_(output_fd) {}

  pid_t pid_;
  int output_fd_;
  std::optional<int> wait_status_;
};

// "exit code 3" or "signal SIGKILL".
std::string DescribeWaitStatus(int wait_status);

// The shell's convention: the exit code, or 128 + the signal's number.
int ExitCodeOf(int wait_status);

}  // namespace tools
}  // namespace distflow

#endif  // DISTFLOW_TOOLS_DISTFLOW_CHILD_PROCESS_H_
