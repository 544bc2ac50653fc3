#include "tools/distflow/line_splitter.h"

#include <algorithm>
#include <utility>

namespace distflow {
namespace tools {

LineSplitter::LineSplitter(size_t tail_lines, size_t max_line_bytes)
    : tail_lines_(tail_lines),
      max_line_bytes_(max_line_bytes == 0 ? 1 : max_line_bytes) {}

std::vector<std::string> LineSplitter::Append(absl::string_view bytes) {
  std::vector<std::string> lines;
  while (!bytes.empty()) {
    const size_t newline = bytes.find('\n');
    const size_t room = max_line_bytes_ - partial_.size();
    if (newline == absl::string_view::npos || newline > room) {
      const size_t take = std::min(bytes.size(), room);
      partial_.append(bytes.data(), take);
      bytes.remove_prefix(take);
      if (partial_.size() >= max_line_bytes_) {
        Complete(std::move(partial_), &lines);
        partial_.clear();
      }
      continue;
    }
    partial_.append(bytes.data(), newline);
    bytes.remove_prefix(newline + 1);
    if (!partial_.empty() && partial_.back() == '\r') partial_.pop_back();
    Complete(std::move(partial_), &lines);
    partial_.clear();
  }
  return lines;
}

std::optional<std::string> LineSplitter::Finish() {
  if (partial_.empty()) return std::nullopt;
  std::vector<std::string> lines;
  Complete(std::move(partial_), &lines);
  partial_.clear();
  return std::move(lines.front());
}

void LineSplitter::Complete(std::string line, std::vector<std::string>* out) {
  if (tail_lines_ > 0) {
    if (tail_.size() == tail_lines_) tail_.pop_front();
    tail_.push_back(line);
  }
  out->push_back(std::move(line));
}

}  // namespace tools
}  // namespace distflow
