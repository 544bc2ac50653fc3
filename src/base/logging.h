// Minimal logging and invariant checks.
//
// DF_CHECK guards programmer invariants only: a failed check is a bug in
// distflow and aborts with the file and line. Input, I/O and network errors are
// reported as absl::Status, never checked.
#ifndef DISTFLOW_BASE_LOGGING_H_
#define DISTFLOW_BASE_LOGGING_H_

#include <sstream>
#include <string>

#include "absl/strings/string_view.h"

namespace distflow {

enum class LogSeverity { kInfo = 0, kWarning = 1, kError = 2, kFatal = 3 };

// Writes one line "I1121 13:49:02.123 file.cc:42] message" to stderr. Messages
// below the level set by SetMinLogSeverity (default kInfo) are dropped.
// Thread-safe.
void LogMessage(LogSeverity severity, const char* file, int line,
                absl::string_view message);
void SetMinLogSeverity(LogSeverity severity);

namespace internal {
// Collects a streamed message and emits it on destruction; aborts after
// emitting if fatal.
class LogLine {
 public:
  LogLine(LogSeverity severity, const char* file, int line)
      : severity_(severity), file_(file), line_(line) {}
  ~LogLine();
  std::ostream& stream() { return stream_; }

 private:
  LogSeverity severity_;
  const char* file_;
  int line_;
  std::ostringstream stream_;
};
}  // namespace internal

}  // namespace distflow

#define DF_LOG(severity)                                              \
  ::distflow::internal::LogLine(::distflow::LogSeverity::k##severity, \
                                __FILE__, __LINE__)                   \
      .stream()

#define DF_CHECK(condition)                                                  \
  if (condition) {                                                           \
  } else /* NOLINT */                                                        \
    ::distflow::internal::LogLine(::distflow::LogSeverity::kFatal, __FILE__, \
                                  __LINE__)                                  \
            .stream()                                                        \
        << "Check failed: " #condition " "

#endif  // DISTFLOW_BASE_LOGGING_H_
