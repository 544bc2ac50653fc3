#include "base/step_trace.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"

namespace distflow {
namespace trace {
namespace internal {
std::atomic<bool> recording{false};
}  // namespace internal

namespace {

struct Span {
  const char* category;
  std::string name;  // a copy: an op's name dies with its graph
  int64_t start_ns, end_ns;
  int64_t thread;
};

struct Recording {
  std::string path;
  int64_t max_events = 0;
  std::vector<Span> spans;
};

ABSL_CONST_INIT absl::Mutex mu(absl::kConstInit);
Recording* current ABSL_GUARDED_BY(mu) = nullptr;
std::string* process_name ABSL_GUARDED_BY(mu) = new std::string;

int64_t ThisThread() {
  thread_local const int64_t id = syscall(SYS_gettid);
  return id;
}

// Chrome's trace format: complete events ("X") in microseconds.
absl::Status Write(const Recording& r, const std::string& name) {
  const int pid = getpid();
  nlohmann::json events = nlohmann::json::array();
  events.push_back(
      {{"ph", "M"},
       {"name", "process_name"},
       {"pid", pid},
       {"args", {{"name", name.empty() ? std::to_string(pid) : name}}}});
  for (const Span& s : r.spans) {
    events.push_back(
        {{"ph", "X"},
         {"cat", s.category},
         {"name", s.name},
         {"pid", pid},
         {"tid", s.thread},
         {"ts", static_cast<double>(s.start_ns) / 1e3},
         {"dur", static_cast<double>(s.end_ns - s.start_ns) / 1e3}});
  }
  const nlohmann::json trace = {{"traceEvents", std::move(events)},
                                {"displayTimeUnit", "ns"}};
  std::ofstream out(r.path);
  out << trace.dump(/*indent=*/-1, ' ', /*ensure_ascii=*/false,
                    nlohmann::json::error_handler_t::replace);
  out.close();
  if (!out) {
    return absl::InternalError(
        absl::StrCat("cannot write the step trace to ", r.path));
  }
  return absl::OkStatus();
}

// Takes the recording to write, ending it.
std::unique_ptr<Recording> Take() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
  internal::recording.store(false, std::memory_order_relaxed);
  std::unique_ptr<Recording> taken(current);
  current = nullptr;
  return taken;
}

// (Logging lives above this layer: stderr, where a task's log goes.)
void Warn(const absl::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "distflow: %s\n", std::string(s.message()).c_str());
  }
}

}  // namespace

int64_t NowNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

void RecordSpan(const char* category, absl::string_view name, int64_t start_ns,
                int64_t end_ns) {
  if (!Enabled()) return;
  std::unique_ptr<Recording> full;
  std::string name_for_file;
  {
    absl::MutexLock lock(&mu);
    if (current == nullptr) return;
    current->spans.push_back(
        {category, std::string(name), start_ns, end_ns, ThisThread()});
    if (static_cast<int64_t>(current->spans.size()) < current->max_events) {
      return;
    }
    full = Take();
    name_for_file = *process_name;
  }
  Warn(Write(*full, name_for_file));  // outside the lock: it takes a while
}

void Start(const std::string& path, int64_t max_events) {
  auto next = std::make_unique<Recording>();
  next->path = path;
  next->max_events = std::max<int64_t>(max_events, 1);
  absl::MutexLock lock(&mu);
  delete current;
  current = next.release();
  internal::recording.store(true, std::memory_order_relaxed);
}

absl::Status Stop() {
  std::unique_ptr<Recording> taken;
  std::string name;
  {
    absl::MutexLock lock(&mu);
    taken = Take();
    name = *process_name;
  }
  return taken == nullptr ? absl::OkStatus() : Write(*taken, name);
}

void SetProcessName(absl::string_view name) {
  absl::MutexLock lock(&mu);
  *process_name = std::string(name);
}

namespace {

// DISTFLOW_TRACE_DIR: record from the start, write at the limit or at exit.
struct StartFromEnvironment {
  StartFromEnvironment() {
    const char* dir = std::getenv("DISTFLOW_TRACE_DIR");
    if (dir == nullptr || *dir == '\0') return;
    const char* limit = std::getenv("DISTFLOW_TRACE_EVENTS");
    const int64_t max_events =
        limit != nullptr && std::atoll(limit) > 0 ? std::atoll(limit) : 200000;
    Start(absl::StrCat(dir, "/distflow-trace.", getpid(), ".json"), max_events);
    std::atexit([] {
      // A process that recorded nothing (such as a launcher that runs no
      // steps) leaves no file.
      {
        absl::MutexLock lock(&mu);
        if (current == nullptr || current->spans.empty()) return;
      }
      Warn(Stop());
    });
  }
};
const StartFromEnvironment start_from_environment;

}  // namespace

}  // namespace trace
}  // namespace distflow
