#include "tools/distflow/line_prefixer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace distflow {
namespace tools {
namespace {

// Foreground colours that read well on dark and light backgrounds: cyan,
// green, yellow, magenta, blue, red, then their bright variants.
constexpr const char* kColours[] = {"36", "32", "33", "35", "34", "31",
                                    "96", "92", "93", "95", "94", "91"};
constexpr size_t kNumColours = sizeof(kColours) / sizeof(kColours[0]);

}  // namespace

LinePrefixer::LinePrefixer(const std::vector<std::string>& task_names,
                           bool colour)
    : names_(task_names), colour_(colour) {
  for (const std::string& name : names_) {
    width_ = std::max(width_, name.size());
  }
}

std::string LinePrefixer::Prefix(absl::string_view task,
                                 absl::string_view line) const {
  std::string padded(task);
  if (padded.size() < width_) padded.append(width_ - padded.size(), ' ');
  const auto it = std::find(names_.begin(), names_.end(), task);
  if (!colour_ || it == names_.end()) return absl::StrCat(padded, " | ", line);
  const char* colour = kColours[(it - names_.begin()) % kNumColours];
  return absl::StrCat("\033[", colour, "m", padded, " |\033[0m ", line);
}

bool ShouldColour(int fd) {
  const char* no_colour = std::getenv("NO_COLOR");
  if (no_colour != nullptr && *no_colour != '\0') return false;
  return isatty(fd) == 1;
}

}  // namespace tools
}  // namespace distflow
