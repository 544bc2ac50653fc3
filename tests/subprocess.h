// Child processes for multi-process tests: started with posix_spawn, output
// captured to a file, waited for with a bound, killed when the test ends.
#ifndef DISTFLOW_TESTS_SUBPROCESS_H_
#define DISTFLOW_TESTS_SUBPROCESS_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

extern char** environ;

namespace distflow {
namespace testing {

// A port that was free a moment ago on 127.0.0.1 (the kernel's choice).
inline int PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

class Subprocess {
 public:
  // Starts `argv` with stdout and stderr to a temporary file.
  explicit Subprocess(std::vector<std::string> argv) {
    std::string path = ::testing::TempDir() + "distflow_subprocess_XXXXXX";
    const int fd = mkstemp(path.data());
    output_path_ = path;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fd, 1);
    posix_spawn_file_actions_adddup2(&actions, fd, 2);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    if (posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ) !=
        0) {
      pid_ = -1;
    }
    posix_spawn_file_actions_destroy(&actions);
    close(fd);
  }
  ~Subprocess() {
    Kill();
    unlink(output_path_.c_str());
  }
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  bool started() const { return pid_ > 0; }
  // Whether the process has exited. It is left unreaped, so that pid()
  // still names it (signals to it do nothing) until Wait.
  bool Exited() const {
    if (pid_ <= 0) return true;
    siginfo_t info{};
    return waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           info.si_pid == pid_;
  }
  // The exit status, or nullopt if still running after `timeout`.
  std::optional<int> Wait(std::chrono::milliseconds timeout) {
    if (exit_code_) return exit_code_;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (pid_ > 0) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        exit_code_ =
            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return exit_code_;
      }
      if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return exit_code_;
  }
  void Kill() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  // Freezes the process (as a hung task: its sockets stay open) or thaws it.
  void Pause() {
    if (pid_ > 0) kill(pid_, SIGSTOP);
  }
  void Resume() {
    if (pid_ > 0) kill(pid_, SIGCONT);
  }
  int pid() const { return pid_; }
  std::string Output() const {
    std::ifstream in(output_path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // Waits until the output contains `text`, for at most `timeout`, or until
  // the process has exited (a task that failed to start never prints it).
  void WaitForOutput(const std::string& text,
                     std::chrono::milliseconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (Output().find(text) == std::string::npos &&
           !Exited() &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  std::string output_path_;
};

}  // namespace testing
}  // namespace distflow

#endif  // DISTFLOW_TESTS_SUBPROCESS_H_
