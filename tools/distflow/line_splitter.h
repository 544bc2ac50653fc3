// Splits a child's output, which arrives in arbitrary chunks, into whole
// lines, and remembers the last few of them for the report when the child
// dies.
#ifndef DISTFLOW_TOOLS_DISTFLOW_LINE_SPLITTER_H_
#define DISTFLOW_TOOLS_DISTFLOW_LINE_SPLITTER_H_

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace distflow {
namespace tools {

class LineSplitter {
 public:
  // Keeps the last `tail_lines` complete lines (see Tail()). A line longer
  // than `max_line_bytes` is cut there and its rest starts a new line, so a
  // child that never writes a newline cannot grow the buffer without bound.
  explicit LineSplitter(size_t tail_lines = 10,
                        size_t max_line_bytes = 64 * 1024);

  // Appends `bytes` and returns the lines it completed, without their '\n'
  // (a '\r' before it is dropped too).
  std::vector<std::string> Append(absl::string_view bytes);

  // At end of stream: the unterminated last line, if any.
  std::optional<std::string> Finish();

  // The last lines seen, oldest first.
  const std::deque<std::string>& Tail() const { return tail_; }

 private:
  void Complete(std::string line, std::vector<std::string>* out);

  const size_t tail_lines_;
  const size_t max_line_bytes_;
  std::string partial_;
  std::deque<std::string> tail_;
};

}  // namespace tools
}  // namespace distflow

#endif  // DISTFLOW_TOOLS_DISTFLOW_LINE_SPLITTER_H_
