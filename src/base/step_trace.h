// A record of where a process spends a step's time: each op's kernel, each
// partition and step, each tensor read from another task, as spans in a
// Chrome trace file (the JSON that chrome://tracing and ui.perfetto.dev
// open).
//
// Off unless asked for, and then cheap to leave in: recording a span is a
// clock read and an append under a lock; when off, one atomic load. Times
// come from CLOCK_MONOTONIC, which every process of a host shares, so the
// files of several tasks on one host line up when merged
// (tools/merge_traces.py).
//
// Setting DISTFLOW_TRACE_DIR records from the start of the process into
// <dir>/distflow-trace.<pid>.json, written when DISTFLOW_TRACE_EVENTS spans
// (default 200000) have been recorded or at exit, whichever comes first: a
// task that is killed writes its file only if it reached the limit.
#ifndef DISTFLOW_BASE_STEP_TRACE_H_
#define DISTFLOW_BASE_STEP_TRACE_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace distflow {
namespace trace {

namespace internal {
extern std::atomic<bool> recording;
}  // namespace internal

// Whether spans are being recorded now.
inline bool Enabled() {
  return internal::recording.load(std::memory_order_relaxed);
}

// Nanoseconds on the clock that spans use.
int64_t NowNanos();

// Records a span of `category` ("op", "step", "transfer", ...: a literal,
// kept by pointer) named `name` from `start_ns` to `end_ns`, on the calling
// thread's row. Does nothing when not recording. Thread-safe.
void RecordSpan(const char* category, absl::string_view name, int64_t start_ns,
                int64_t end_ns);

// For a span that ends elsewhere (in a callback): SpanStart() where it
// begins, now if recording and -1 if not; EndSpan where it ends, which
// records it if it began while recording.
inline int64_t SpanStart() { return Enabled() ? NowNanos() : -1; }
inline void EndSpan(const char* category, absl::string_view name,
                    int64_t start_ns) {
  if (start_ns >= 0) RecordSpan(category, name, start_ns, NowNanos());
}

// Records the scope it lives in as a span, if recording when it is made.
class ScopedSpan {
 public:
  ScopedSpan(const char* category, absl::string_view name)
      : category_(category), name_(name), start_ns_(SpanStart()) {}
  ~ScopedSpan() { EndSpan(category_, name_, start_ns_); }
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;

 private:
  const char* category_;
  absl::string_view name_;  // must outlive the span
  int64_t start_ns_;
};

// Starts recording into the file `path`, replacing a recording in progress
// (which is dropped). The file is written by Stop, or once `max_events`
// spans have been recorded (recording then stops).
void Start(const std::string& path, int64_t max_events);

// Stops recording and writes the file, if recording; INTERNAL naming the
// file when it cannot be written.
absl::Status Stop();

// The name the trace shows for this process, such as its task
// ("/job:ps/replica:0/task:0"). Kept across Start calls.
void SetProcessName(absl::string_view name);

}  // namespace trace
}  // namespace distflow

#endif  // DISTFLOW_BASE_STEP_TRACE_H_
