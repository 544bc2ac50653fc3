// SIGINT, SIGTERM and SIGHUP as bytes on a pipe (the self-pipe trick), so
// that the launcher's poll loop sees them like any task's output, and SIGPIPE
// ignored: a closed stdout (distflow local ... | head) must not kill the
// launcher before it has stopped its tasks. One instance at a time; the
// previous dispositions come back when it is destroyed.
#ifndef DISTFLOW_TOOLS_DISTFLOW_STOP_SIGNALS_H_
#define DISTFLOW_TOOLS_DISTFLOW_STOP_SIGNALS_H_

#include <signal.h>

#include <vector>

namespace distflow {
namespace tools {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The read end of the pipe, to poll (-1 if it could not be made).
  int fd() const { return fds_[0]; }

  // The signals received since the last call, oldest first.
  std::vector<int> Take();

 private:
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
  static constexpr int kNumSignals = 3;

  int fds_[2];
  struct sigaction saved_[kNumSignals];
  struct sigaction saved_pipe_;
};

}  // namespace tools
}  // namespace distflow

#endif  // DISTFLOW_TOOLS_DISTFLOW_STOP_SIGNALS_H_
