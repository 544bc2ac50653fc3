#include "tools/distflow/console.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <utility>

namespace distflow {
namespace tools {
namespace {

// A status line wider than the terminal wraps, and a carriage return then
// redraws only its last row: cut it to the width.
size_t TerminalWidth(FILE* out) {
  winsize size{};
  if (ioctl(fileno(out), TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
    return size.ws_col;
  }
  return 80;
}

}  // namespace

Console::Console(FILE* out, FILE* err, bool interactive)
    : out_(out), err_(err), interactive_(interactive) {}

void Console::PrintLine(absl::string_view line) {
  EraseStatus();
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fputc('\n', out_);
  DrawStatus();
  std::fflush(out_);
}

void Console::PrintMessage(absl::string_view text) {
  EraseStatus();
  std::fflush(out_);
  std::fwrite(text.data(), 1, text.size(), err_);
  std::fputc('\n', err_);
  std::fflush(err_);
  DrawStatus();
  std::fflush(out_);
}

void Console::SetStatus(std::string status) {
  if (!interactive_) return;
  EraseStatus();
  status_ = std::move(status);
  DrawStatus();
  std::fflush(out_);
}

void Console::Finish() {
  if (status_drawn_) std::fputc('\n', out_);
  status_drawn_ = false;
  status_.clear();
  std::fflush(out_);
}

void Console::EraseStatus() {
  if (!status_drawn_) return;
  std::fputs("\r\033[K", out_);
  status_drawn_ = false;
}

void Console::DrawStatus() {
  if (!interactive_ || status_.empty()) return;
  const size_t width = TerminalWidth(out_);
  const std::string shown =
      status_.size() < width ? status_ : status_.substr(0, width - 1);
  std::fputs("\033[1m", out_);  // bold, to tell it from the tasks' lines
  std::fwrite(shown.data(), 1, shown.size(), out_);
  std::fputs("\033[0m", out_);
  status_drawn_ = true;
}

}  // namespace tools
}  // namespace distflow
