// The progress line: how a training program tells `distflow local` where it
// is, so that the launcher can show one status line for the whole job.
//
// A progress line is a line of the program's output (stdout or stderr) whose
// first word is `progress`, followed by space-separated key=value fields:
//
//   progress step=250/6000 loss=0.4123 examples_per_sec=1834
//
//   step              the global step, optionally /the last step
//   loss              the loss of the latest step (optional)
//   examples_per_sec  training speed (optional)
//
// Other keys are allowed and ignored, so a program may add its own. A line
// whose known fields do not parse is not a progress line. docs/formats.md
// documents the format.
#ifndef DISTFLOW_TOOLS_DISTFLOW_PROGRESS_LINE_H_
#define DISTFLOW_TOOLS_DISTFLOW_PROGRESS_LINE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace distflow {
namespace tools {

struct Progress {
  int64_t step = 0;
  int64_t last_step = 0;  // 0: not given
  std::optional<double> loss;
  std::optional<double> examples_per_sec;
};

// The progress in `line`, or nullopt if it is not a progress line.
std::optional<Progress> ParseProgressLine(absl::string_view line);

// Turns the chief's progress lines into one status line with an estimate of
// the time left.
class ProgressMeter {
 public:
  // `task` names the task whose progress is shown; `default_last_step` is
  // the last step when the lines do not carry it (0: unknown, no ETA).
  ProgressMeter(std::string task, int64_t default_last_step);

  // Records `progress`, seen at `now_secs` (any monotonic clock).
  void Update(const Progress& progress, double now_secs);

  // "worker0  step 250/6000 (4%)  loss 0.4123  1834 examples/sec  ETA 3m05s";
  // empty before the first Update.
  std::string StatusLine() const;

 private:
  const std::string task_;
  const int64_t default_last_step_;
  std::optional<Progress> latest_;
  // The first progress seen and when: the speed in steps is measured from
  // there, which smooths out the noise of single log intervals.
  int64_t first_step_ = 0;
  double first_secs_ = 0;
  double steps_per_sec_ = 0;
};

// The value of --train_steps=N (or --train_steps N) among a program's
// arguments, the last step for the ETA when its progress lines do not say;
// 0 when absent or not a positive integer.
int64_t TrainStepsFlag(const std::vector<std::string>& args);

// "42s", "3m05s", "1h02m".
std::string FormatDuration(double secs);

}  // namespace tools
}  // namespace distflow

#endif  // DISTFLOW_TOOLS_DISTFLOW_PROGRESS_LINE_H_
