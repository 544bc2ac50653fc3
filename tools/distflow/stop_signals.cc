#include "tools/distflow/stop_signals.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

namespace distflow {
namespace tools {
namespace {

int g_signal_pipe_write = -1;

void OnStopSignal(int signo) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(signo);
  (void)!write(g_signal_pipe_write, &byte, 1);
  errno = saved;
}

}  // namespace

StopSignals::StopSignals() {
  if (pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) fds_[0] = fds_[1] = -1;
  g_signal_pipe_write = fds_[1];
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int i = 0; i < kNumSignals; ++i) {
    sigaction(kSignals[i], &action, &saved_[i]);
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &saved_pipe_);
}

StopSignals::~StopSignals() {
  for (int i = 0; i < kNumSignals; ++i) {
    sigaction(kSignals[i], &saved_[i], nullptr);
  }
  sigaction(SIGPIPE, &saved_pipe_, nullptr);
  g_signal_pipe_write = -1;
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
}

std::vector<int> StopSignals::Take() {
  std::vector<int> signals;
  unsigned char byte;
  while (fds_[0] >= 0 && read(fds_[0], &byte, 1) == 1) {
    signals.push_back(byte);
  }
  return signals;
}

}  // namespace tools
}  // namespace distflow
