#include "tools/distflow/progress_line.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace distflow {
namespace tools {
namespace {

bool ParseStep(absl::string_view value, Progress* progress) {
  std::pair<absl::string_view, absl::string_view> parts =
      absl::StrSplit(value, absl::MaxSplits('/', 1));
  if (!absl::SimpleAtoi(parts.first, &progress->step) || progress->step < 0) {
    return false;
  }
  if (parts.second.empty()) return value.find('/') == absl::string_view::npos;
  return absl::SimpleAtoi(parts.second, &progress->last_step) &&
         progress->last_step > 0;
}

bool ParseNumber(absl::string_view value, std::optional<double>* out) {
  double v = 0;
  if (!absl::SimpleAtod(value, &v) || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

}  // namespace

std::optional<Progress> ParseProgressLine(absl::string_view line) {
  const std::vector<absl::string_view> words =
      absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (words.empty() || words[0] != "progress") return std::nullopt;
  Progress progress;
  bool has_step = false;
  for (size_t i = 1; i < words.size(); ++i) {
    const size_t eq = words[i].find('=');
    if (eq == absl::string_view::npos) continue;
    const absl::string_view key = words[i].substr(0, eq);
    const absl::string_view value = words[i].substr(eq + 1);
    bool ok = true;
    if (key == "step") {
      ok = ParseStep(value, &progress);
      has_step = ok;
    } else if (key == "loss") {
      ok = ParseNumber(value, &progress.loss);
    } else if (key == "examples_per_sec") {
      ok = ParseNumber(value, &progress.examples_per_sec);
    }
    if (!ok) return std::nullopt;
  }
  if (!has_step) return std::nullopt;
  return progress;
}

ProgressMeter::ProgressMeter(std::string task, int64_t default_last_step)
    : task_(std::move(task)), default_last_step_(default_last_step) {}

void ProgressMeter::Update(const Progress& progress, double now_secs) {
  // A step lower than the first one seen means the job started over (the
  // program was restarted from an older checkpoint): measure anew.
  if (!latest_.has_value() || progress.step < first_step_) {
    first_step_ = progress.step;
    first_secs_ = now_secs;
    steps_per_sec_ = 0;
  } else if (now_secs > first_secs_ && progress.step > first_step_) {
    steps_per_sec_ = (progress.step - first_step_) / (now_secs - first_secs_);
  }
  latest_ = progress;
}

std::string ProgressMeter::StatusLine() const {
  if (!latest_.has_value()) return "";
  const Progress& p = *latest_;
  const int64_t last =
      p.last_step > 0 ? p.last_step : std::max<int64_t>(default_last_step_, 0);
  std::string line = absl::StrCat(task_, "  step ", p.step);
  if (last > 0) {
    const int64_t percent = std::min<int64_t>(100, p.step * 100 / last);
    absl::StrAppend(&line, "/", last, " (", percent, "%)");
  }
  if (p.loss.has_value()) absl::StrAppendFormat(&line, "  loss %.4f", *p.loss);
  if (p.examples_per_sec.has_value()) {
    absl::StrAppendFormat(&line, "  %.0f examples/sec", *p.examples_per_sec);
  }
  if (last > 0 && steps_per_sec_ > 0) {
    const double left = std::max<int64_t>(0, last - p.step) / steps_per_sec_;
    absl::StrAppend(&line, "  ETA ", FormatDuration(left));
  }
  return line;
}

int64_t TrainStepsFlag(const std::vector<std::string>& args) {
  constexpr absl::string_view kFlag = "--train_steps";
  int64_t steps = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    if (arg == "--") break;  // the program's own positional arguments
    absl::string_view value;
    if (arg == kFlag && i + 1 < args.size()) {
      value = args[i + 1];
    } else if (absl::ConsumePrefix(&arg, kFlag) &&
               absl::ConsumePrefix(&arg, "=")) {
      value = arg;
    } else {
      continue;
    }
    // The last one wins, as in most flag parsers.
    if (!absl::SimpleAtoi(value, &steps) || steps < 0) steps = 0;
  }
  return steps;
}

std::string FormatDuration(double secs) {
  const int64_t s = secs <= 0 ? 0 : static_cast<int64_t>(std::llround(secs));
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
}

}  // namespace tools
}  // namespace distflow
