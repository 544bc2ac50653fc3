#include "base/step_trace.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace distflow {
namespace trace {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string TracePath(const std::string& test) {
  return absl::StrCat(::testing::TempDir(), "/", test, ".", getpid(), ".json");
}

nlohmann::json ReadTrace(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "no trace at " << path;
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// The complete events ("X") of a trace.
std::vector<nlohmann::json> Spans(const nlohmann::json& trace) {
  std::vector<nlohmann::json> spans;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] == "X") spans.push_back(e);
  }
  return spans;
}

TEST(StepTraceTest, SpansOfSeveralThreadsLandInAChromeTrace) {
  const std::string path = TracePath("several_threads");
  SetProcessName("/job:ps/replica:0/task:0");
  Start(path, 1000);
  ASSERT_TRUE(Enabled());
  auto work = [](const std::string& name) {
    ScopedSpan span("op", name);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  };
  std::thread other(work, "other thread's op");
  work("this thread's op");
  other.join();
  const int64_t now = NowNanos();
  RecordSpan("transfer", "a \"quoted\" \\ name", now - 5000, now);
  ASSERT_TRUE(Stop().ok());
  EXPECT_FALSE(Enabled());

  const nlohmann::json trace = ReadTrace(path);
  ASSERT_FALSE(trace.is_discarded()) << "the trace is not valid JSON";
  EXPECT_EQ(trace["traceEvents"][0]["ph"], "M");
  EXPECT_EQ(trace["traceEvents"][0]["args"]["name"],
            "/job:ps/replica:0/task:0");
  const std::vector<nlohmann::json> spans = Spans(trace);
  ASSERT_EQ(spans.size(), 3u);
  std::set<std::string> names;
  std::set<int64_t> threads;
  for (const nlohmann::json& s : spans) {
    names.insert(s["name"].get<std::string>());
    threads.insert(s["tid"].get<int64_t>());
    EXPECT_EQ(s["pid"], getpid());
    EXPECT_GE(s["dur"].get<double>(), 0);
  }
  EXPECT_EQ(names,
            (std::set<std::string>{"other thread's op", "this thread's op",
                                   "a \"quoted\" \\ name"}));
  EXPECT_EQ(threads.size(), 2u);
  for (const nlohmann::json& s : spans) {
    if (s["cat"] == "op") {
      // Slept 2 ms inside the span; ts and dur are in microseconds.
      EXPECT_GE(s["dur"].get<double>(), 2000);
    } else {
      EXPECT_EQ(s["cat"], "transfer");
      EXPECT_DOUBLE_EQ(s["dur"].get<double>(), 5.0);
      EXPECT_DOUBLE_EQ(s["ts"].get<double>(), (now - 5000) / 1e3);
    }
  }
  std::remove(path.c_str());
}

TEST(StepTraceTest, NothingIsRecordedWhenNotStarted) {
  ASSERT_FALSE(Enabled());
  { ScopedSpan span("op", "unseen"); }
  RecordSpan("op", "unseen", 0, 1);
  const std::string path = TracePath("not_started");
  Start(path, 10);
  ASSERT_TRUE(Stop().ok());
  EXPECT_TRUE(Spans(ReadTrace(path)).empty());
  std::remove(path.c_str());
}

TEST(StepTraceTest, TheFileIsWrittenWhenTheLimitIsReached) {
  const std::string path = TracePath("limit");
  Start(path, 3);
  for (int i = 0; i < 5; ++i)
    RecordSpan("op", absl::StrCat("op ", i), i, i + 1);
  EXPECT_FALSE(Enabled()) << "recording goes on past its limit";
  const std::vector<nlohmann::json> spans = Spans(ReadTrace(path));
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[2]["name"], "op 2");
  EXPECT_TRUE(Stop().ok());  // nothing left to write
  std::remove(path.c_str());
}

TEST(StepTraceTest, AnUnwritableFileIsAnErrorNamingIt) {
  const std::string path = "/nonexistent-directory/trace.json";
  Start(path, 10);
  RecordSpan("op", "x", 0, 1);
  absl::Status s = Stop();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr(path));
}

// tools/merge_traces.py puts the files of several processes on one
// timeline and prints their spans' times.
TEST(StepTraceTest, TracesOfSeveralTasksMergeIntoOne) {
  std::vector<std::string> paths;
  for (const char* task :
       {"/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"}) {
    paths.push_back(TracePath(absl::StrCat("merge_", paths.size())));
    SetProcessName(task);
    Start(paths.back(), 100);
    RecordSpan("op", absl::StrCat("op of ", task), 1000, 5000);
    RecordSpan("op", absl::StrCat("op of ", task), 6000, 8000);
    ASSERT_TRUE(Stop().ok());
  }
  const std::string merged = TracePath("merged");
  const std::string summary = TracePath("summary") + ".txt";
  const std::string command = absl::StrCat(
      "/usr/bin/python3 " DISTFLOW_SOURCE_DIR
      "/tools/merge_traces.py --summary",
      " --out ", merged, " ", paths[0], " ", paths[1], " > ", summary);
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const nlohmann::json trace = ReadTrace(merged);
  ASSERT_FALSE(trace.is_discarded());
  EXPECT_EQ(Spans(trace).size(), 4u);
  std::ifstream in(summary);
  const std::string table((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  // Per task and name: two spans, a median of 3 us, 6 us in all.
  EXPECT_THAT(table, HasSubstr("/job:ps/replica:0/task:0"));
  EXPECT_THAT(table, HasSubstr("2        3.0       0.0  op of /job:worker/"));
  for (const std::string& p : paths) std::remove(p.c_str());
  std::remove(merged.c_str());
  std::remove(summary.c_str());
}

// --timeline follows the master's steps: each span's start as an offset from
// its step's start, and its length, as medians over the steps, earliest
// first; a span outside every step is left out.
TEST(StepTraceTest, TheTimelinePutsEachSpanAtItsOffsetInTheStep) {
  struct Span {
    const char* category;
    const char* name;
    int64_t start_ns, end_ns;
  };
  std::vector<std::string> paths;
  auto write = [&paths](const char* task, const std::vector<Span>& spans) {
    paths.push_back(TracePath(absl::StrCat("timeline_", paths.size())));
    SetProcessName(task);
    Start(paths.back(), 100);
    for (const Span& s : spans) {
      RecordSpan(s.category, s.name, s.start_ns, s.end_ns);
    }
    EXPECT_TRUE(Stop().ok());
  };
  // The worker runs the master: steps at 0 and 20 us, of 10 us each.
  write("/job:worker/replica:0/task:0", {{"step", "step", 0, 10000},
                                         {"step", "step", 20000, 30000},
                                         {"op", "forward", 3000, 7000},
                                         {"op", "forward", 23000, 29000}});
  // The ps starts 1 and 2 us into the steps; one span lies between them.
  write("/job:ps/replica:0/task:0", {{"op", "update", 1000, 2000},
                                     {"op", "update", 22000, 23000},
                                     {"op", "between steps", 15000, 16000}});
  {
    // As if written by another process (tasks are told apart by pid).
    nlohmann::json ps = ReadTrace(paths.back());
    ASSERT_FALSE(ps.is_discarded());
    for (auto& event : ps["traceEvents"]) {
      event["pid"] = event["pid"].get<int64_t>() + 1;
    }
    std::ofstream(paths.back()) << ps.dump();
  }
  const std::string table_path = TracePath("timeline") + ".txt";
  const std::string command = absl::StrCat(
      "/usr/bin/python3 " DISTFLOW_SOURCE_DIR
      "/tools/merge_traces.py --timeline ",
      paths[0], " ", paths[1], " > ", table_path);
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(table_path);
  const std::string table((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  EXPECT_THAT(table, HasSubstr("2 steps of /job:worker/replica:0/task:0, "
                               "median length 10.0 us"));
  // update: starts 1.5 us in, lasts 1 us; forward: 3 us in, lasts 5 us.
  const size_t update = table.find("1.5       1.0      2  update");
  const size_t forward = table.find("3.0       5.0      2  forward");
  EXPECT_NE(update, std::string::npos) << table;
  EXPECT_NE(forward, std::string::npos) << table;
  EXPECT_LT(update, forward) << table;
  EXPECT_THAT(table, Not(HasSubstr("between steps")));
  for (const std::string& p : paths) std::remove(p.c_str());
  std::remove(table_path.c_str());
}

}  // namespace
}  // namespace trace
}  // namespace distflow
