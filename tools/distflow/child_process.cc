#include "tools/distflow/child_process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>

#include "absl/strings/str_cat.h"

extern char** environ;

namespace distflow {
namespace tools {
namespace {

// Runs in the forked child, before exec: async-signal-safe calls only. On
// failure the errno goes back through `error_fd` (closed by a successful
// exec) and the child exits.
[[noreturn]] void ExecChild(pid_t parent, int output_fd, int stdin_fd,
                            int error_fd, char* const argv[],
                            char* const envp[]) {
  auto fail = [&] {
    const int e = errno;
    (void)!write(error_fd, &e, sizeof(e));
    _exit(127);
  };
  // Own process group: the launcher signals the task and what it started
  // together, and Ctrl-C on the terminal reaches the launcher only.
  if (setpgid(0, 0) != 0) fail();
  // If the launcher dies without stopping its tasks, the kernel does.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail();
  if (getppid() != parent) _exit(1);  // it died before prctl
  // The launcher blocks nothing, but ignores SIGPIPE; tasks get defaults.
  signal(SIGPIPE, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (dup2(stdin_fd, 0) < 0 || dup2(output_fd, 1) < 0 ||
      dup2(output_fd, 2) < 0) {
    fail();
  }
  execvpe(argv[0], argv, envp);
  fail();
  _exit(127);  // not reached: fail() exits
}

}  // namespace

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(
    const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& env) {
  if (argv.empty() || argv[0].empty()) {
    return absl::InvalidArgumentError("no program to run");
  }
  // Everything the child needs is prepared before fork.
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = strchr(*e, '=');
    if (eq != nullptr) merged[std::string(*e, eq - *e)] = eq + 1;
  }
  for (const auto& [name, value] : env) merged[name] = value;
  std::vector<std::string> env_strings;
  for (const auto& [name, value] : merged) {
    env_strings.push_back(absl::StrCat(name, "=", value));
  }
  std::vector<char*> envp, args;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  int output[2], error[2];
  if (pipe2(output, O_CLOEXEC) != 0) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot create a pipe for ", argv[0], ": ", strerror(errno)));
  }
  if (pipe2(error, O_CLOEXEC) != 0) {
    close(output[0]);
    close(output[1]);
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot create a pipe for ", argv[0], ": ", strerror(errno)));
  }
  const int stdin_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    ExecChild(parent, output[1], stdin_fd, error[1], args.data(), envp.data());
  }
  const int fork_errno = errno;
  close(output[1]);
  close(error[1]);
  if (stdin_fd >= 0) close(stdin_fd);
  if (pid < 0) {
    close(output[0]);
    close(error[0]);
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot start ", argv[0], ": fork failed: ", strerror(fork_errno)));
  }
  // The error pipe closes on exec: EOF means the program is running.
  int exec_errno = 0;
  ssize_t n;
  do {
    n = read(error[0], &exec_errno, sizeof(exec_errno));
  } while (n < 0 && errno == EINTR);
  close(error[0]);
  if (n == sizeof(exec_errno)) {
    close(output[0]);
    waitpid(pid, nullptr, 0);
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot run '", argv[0], "': ", strerror(exec_errno),
        exec_errno == ENOENT ? " (give a path such as ./build/bin/program, or "
                               "a program on PATH)"
                             : ""));
  }
  fcntl(output[0], F_SETFL, fcntl(output[0], F_GETFL) | O_NONBLOCK);
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, output[0]));
}

ChildProcess::~ChildProcess() {
  if (!wait_status_.has_value()) {
    Signal(SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  CloseOutput();
}

bool ChildProcess::ReadAvailable(std::string* out) {
  if (output_fd_ < 0) return false;
  char buffer[65536];
  while (true) {
    const ssize_t n = read(output_fd_, buffer, sizeof(buffer));
    if (n > 0) {
      out->append(buffer, n);
      // A full buffer: give the other tasks a turn before reading more.
      if (static_cast<size_t>(n) == sizeof(buffer)) return true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    CloseOutput();  // end of stream, or an error we cannot recover from
    return false;
  }
}

void ChildProcess::Signal(int signo) {
  if (wait_status_.has_value()) return;
  // The whole group, or the child alone if it has left the group.
  if (kill(-pid_, signo) != 0) kill(pid_, signo);
}

std::optional<int> ChildProcess::TryWait() {
  if (wait_status_.has_value()) return wait_status_;
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    wait_status_ = status;
    // Whatever the task started in its group goes with it.
    kill(-pid_, SIGKILL);
  }
  return wait_status_;
}

void ChildProcess::CloseOutput() {
  if (output_fd_ >= 0) close(output_fd_);
  output_fd_ = -1;
}

std::string DescribeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) {
    return absl::StrCat("exit code ", WEXITSTATUS(wait_status));
  }
  if (WIFSIGNALED(wait_status)) {
    const int signo = WTERMSIG(wait_status);
    const char* name = sigabbrev_np(signo);
    return name != nullptr ? absl::StrCat("signal SIG", name)
                           : absl::StrCat("signal ", signo);
  }
  return absl::StrCat("wait status ", wait_status);
}

int ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

}  // namespace tools
}  // namespace distflow
