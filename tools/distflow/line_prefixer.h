// Marks every line of a task's output with the task's name ("ps0",
// "worker1"), padded so that the output of all tasks lines up, and coloured
// (one colour per task) when the output goes to a terminal.
#ifndef DISTFLOW_TOOLS_DISTFLOW_LINE_PREFIXER_H_
#define DISTFLOW_TOOLS_DISTFLOW_LINE_PREFIXER_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace distflow {
namespace tools {

class LinePrefixer {
 public:
  // `task_names` are all the tasks, in the order their colours are given;
  // `colour` turns on ANSI colours.
  LinePrefixer(const std::vector<std::string>& task_names, bool colour);

  // "worker1 | " + line, with the name padded to the longest task name.
  // `task` must be one of the names given to the constructor; another is
  // printed uncoloured.
  std::string Prefix(absl::string_view task, absl::string_view line) const;

 private:
  std::vector<std::string> names_;
  size_t width_ = 0;
  bool colour_;
};

// True when `fd` is a terminal and the NO_COLOR convention
// (https://no-color.org) does not ask for plain text.
bool ShouldColour(int fd);

}  // namespace tools
}  // namespace distflow

#endif  // DISTFLOW_TOOLS_DISTFLOW_LINE_PREFIXER_H_
