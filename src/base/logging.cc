#include "base/logging.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_macros.h"

namespace distflow {
namespace {

std::atomic<int> min_severity{static_cast<int>(LogSeverity::kInfo)};

const char* Basename(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

}  // namespace

void SetMinLogSeverity(LogSeverity severity) {
  min_severity = static_cast<int>(severity);
}

void LogMessage(LogSeverity severity, const char* file, int line,
                absl::string_view message) {
  if (static_cast<int>(severity) < min_severity &&
      severity != LogSeverity::kFatal)
    return;
  static absl::Mutex mu(absl::kConstInit);
  const char letter = "IWEF"[static_cast<int>(severity)];
  const std::string time =
      absl::FormatTime("%m%d %H:%M:%E3S", absl::Now(), absl::LocalTimeZone());
  absl::MutexLock lock(&mu);
  std::fprintf(stderr, "%c%s %s:%d] %.*s\n", letter, time.c_str(),
               Basename(file), line, static_cast<int>(message.size()),
               message.data());
  std::fflush(stderr);
}

namespace internal {
LogLine::~LogLine() {
  LogMessage(severity_, file_, line_, stream_.str());
  if (severity_ == LogSeverity::kFatal) std::abort();
}
}  // namespace internal

absl::Status AddErrorContext(const absl::Status& status,
                             absl::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat(context, ": ", status.message()));
}

}  // namespace distflow
