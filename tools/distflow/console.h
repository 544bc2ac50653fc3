// Where `distflow local` writes: the tasks' lines on stdout, its own
// messages on stderr, and on a terminal one status line kept at the bottom
// (redrawn in place with a carriage return and an ANSI erase).
#ifndef DISTFLOW_TOOLS_DISTFLOW_CONSOLE_H_
#define DISTFLOW_TOOLS_DISTFLOW_CONSOLE_H_

#include <cstdio>
#include <string>

#include "absl/strings/string_view.h"

namespace distflow {
namespace tools {

class Console {
 public:
  // `interactive`: `out` is a terminal, so the status line is drawn.
  Console(FILE* out, FILE* err, bool interactive);

  bool interactive() const { return interactive_; }

  // One line of a task's output.
  void PrintLine(absl::string_view line);

  // A message of the launcher itself (one or more lines, no final newline).
  void PrintMessage(absl::string_view text);

  // Replaces the status line (interactive only; ignored otherwise).
  void SetStatus(std::string status);

  // Leaves the last status line on the screen as an ordinary line.
  void Finish();

 private:
  void EraseStatus();
  void DrawStatus();

  FILE* out_;
  FILE* err_;
  const bool interactive_;
  std::string status_;
  bool status_drawn_ = false;
};

}  // namespace tools
}  // namespace distflow

#endif  // DISTFLOW_TOOLS_DISTFLOW_CONSOLE_H_
