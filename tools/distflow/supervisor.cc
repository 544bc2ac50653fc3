#include "tools/distflow/supervisor.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/distflow/child_process.h"
#include "tools/distflow/line_prefixer.h"
#include "tools/distflow/line_splitter.h"
#include "tools/distflow/progress_line.h"
#include "tools/distflow/stop_signals.h"

namespace distflow {
namespace tools {
namespace {

constexpr int kPollMillis = 100;

double NowSecs() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Task {
  const TaskSpec* spec;
  std::unique_ptr<ChildProcess> process;
  std::unique_ptr<LineSplitter> lines;
  FILE* log = nullptr;
};

class LocalClusterRun {
 public:
  LocalClusterRun(const SupervisorOptions& options, Console* console)
      : options_(options),
        console_(console),
        prefixer_(TaskNames(options), options.colour),
        meter_(options.chief, options.default_last_step) {}

  ~LocalClusterRun() {
    for (Task& task : tasks_) {
      if (task.log != nullptr) std::fclose(task.log);
    }
  }

  int Run() {
    if (!OpenLogs() || !StartAll()) {
      StopAll(NowSecs());
      WaitForAll();
      return 1;
    }
    WaitForAll();
    return exit_code_.value_or(1);
  }

 private:
  static std::vector<std::string> TaskNames(const SupervisorOptions& options) {
    std::vector<std::string> names;
    for (const TaskSpec& spec : options.tasks) names.push_back(spec.name);
    return names;
  }

  void Message(absl::string_view text) {
    console_->PrintMessage(absl::StrCat("distflow local: ", text));
  }

  bool OpenLogs() {
    for (const TaskSpec& spec : options_.tasks) {
      Task task;
      task.spec = &spec;
      task.lines = std::make_unique<LineSplitter>(options_.tail_lines);
      tasks_.push_back(std::move(task));
    }
    if (options_.log_dir.empty()) return true;
    std::error_code error;
    std::filesystem::create_directories(options_.log_dir, error);
    if (error) {
      Message(absl::StrCat("cannot create --log_dir ", options_.log_dir, ": ",
                           error.message()));
      return false;
    }
    for (Task& task : tasks_) {
      const std::string path =
          (std::filesystem::path(options_.log_dir) / (task.spec->name + ".log"))
              .string();
      task.log = std::fopen(path.c_str(), "w");
      if (task.log == nullptr) {
        Message(absl::StrCat("cannot write ", path, ": ", strerror(errno)));
        return false;
      }
    }
    return true;
  }

  bool StartAll() {
    for (Task& task : tasks_) {
      auto process = ChildProcess::Start(task.spec->argv, task.spec->env);
      if (!process.ok()) {
        Message(absl::StrCat("cannot start ", task.spec->name, ": ",
                             process.status().message()));
        return false;
      }
      task.process = *std::move(process);
    }
    return true;
  }

  // The poll loop: until every task has exited and its output is read.
  void WaitForAll() {
    while (true) {
      std::vector<pollfd> fds;
      fds.push_back({signals_.fd(), POLLIN, 0});
      std::vector<Task*> polled;
      for (Task& task : tasks_) {
        if (task.process != nullptr && task.process->output_fd() >= 0) {
          fds.push_back({task.process->output_fd(), POLLIN, 0});
          polled.push_back(&task);
        }
      }
      if (poll(fds.data(), fds.size(), kPollMillis) < 0 && errno != EINTR) {
        Message(absl::StrCat("poll failed: ", strerror(errno)));
        StopAll(NowSecs());
      }
      for (int signo : signals_.Take()) OnSignal(signo);
      for (size_t i = 0; i < polled.size(); ++i) {
        if (fds[i + 1].revents != 0) ReadOutput(*polled[i]);
      }
      bool all_done = true;
      for (Task& task : tasks_) {
        if (task.process == nullptr) continue;
        const bool running = !task.process->wait_status().has_value();
        if (running && task.process->TryWait().has_value()) OnExit(task);
        all_done = all_done && task.process->wait_status().has_value();
      }
      if (all_done) break;
      CheckDeadlines(NowSecs());
    }
  }

  void ReadOutput(Task& task) {
    std::string bytes;
    const bool open = task.process->ReadAvailable(&bytes);
    for (const std::string& line : task.lines->Append(bytes)) {
      ShowLine(task, line);
    }
    if (!open) {
      if (auto last = task.lines->Finish()) ShowLine(task, *last);
    }
  }

  void ShowLine(Task& task, const std::string& line) {
    if (task.log != nullptr) {
      std::fwrite(line.data(), 1, line.size(), task.log);
      std::fputc('\n', task.log);
      std::fflush(task.log);
    }
    if (task.spec->name == options_.chief) {
      if (auto progress = ParseProgressLine(line)) {
        meter_.Update(*progress, NowSecs());
        // On a terminal the status line shows it; elsewhere it is a line.
        if (console_->interactive()) {
          console_->SetStatus(meter_.StatusLine());
          return;
        }
      }
    }
    console_->PrintLine(prefixer_.Prefix(task.spec->name, line));
  }

  void OnExit(Task& task) {
    // What the task wrote before it exited is in the pipe now. A process it
    // started may hold the pipe open: read what is there, then close it.
    while (task.process->output_fd() >= 0) {
      std::string bytes;
      const bool open = task.process->ReadAvailable(&bytes);
      for (const std::string& line : task.lines->Append(bytes)) {
        ShowLine(task, line);
      }
      if (open && bytes.empty()) task.process->CloseOutput();
    }
    if (auto last = task.lines->Finish()) ShowLine(task, *last);

    const int status = *task.process->wait_status();
    const bool failed = ExitCodeOf(status) != 0;
    const bool is_chief = task.spec->name == options_.chief;
    if (!failed) {
      if (is_chief && !exit_code_.has_value()) exit_code_ = 0;
      return;
    }
    if (stopping_) return;  // stopped by us
    ReportFailure(task, status);
    exit_code_ = ExitCodeOf(status);
    StopAll(NowSecs());
  }

  void ReportFailure(const Task& task, int status) {
    std::string report =
        absl::StrCat(task.spec->name, " (pid ", task.process->pid(),
                     ") failed with ", DescribeWaitStatus(status));
    const auto& tail = task.lines->Tail();
    if (tail.empty()) {
      absl::StrAppend(&report, "; it wrote nothing");
    } else if (tail.size() == 1) {
      absl::StrAppend(&report, "; its last line:");
    } else {
      absl::StrAppend(&report, "; its last ", tail.size(), " lines:");
    }
    bool port_taken = false;
    for (const std::string& line : tail) {
      absl::StrAppend(&report, "\n  ", prefixer_.Prefix(task.spec->name, line));
      port_taken = port_taken || absl::StrContains(line, "port is in use") ||
                   absl::StrContains(line, "Address already in use");
    }
    if (port_taken) {
      absl::StrAppend(&report,
                      "\ndistflow local: the port was free when it was picked; "
                      "another process took it since: run again");
    }
    absl::StrAppend(&report, "\ndistflow local: stopping the other tasks");
    Message(report);
  }

  void OnSignal(int signo) {
    if (!signalled_) {
      signalled_ = true;
      Message(absl::StrCat("SIG", sigabbrev_np(signo),
                           ": stopping all tasks (again to kill them now)"));
      exit_code_ = 128 + signo;
      StopAll(NowSecs());
      return;
    }
    KillRemaining("on a second signal");
  }

  void StopAll(double now) {
    if (stopping_) return;
    stopping_ = true;
    kill_at_ = now + options_.grace_secs;
    for (Task& task : tasks_) {
      if (task.process != nullptr) task.process->Signal(SIGTERM);
    }
  }

  void KillRemaining(absl::string_view why) {
    killed_ = true;
    for (Task& task : tasks_) {
      if (task.process == nullptr || task.process->wait_status().has_value()) {
        continue;
      }
      Message(absl::StrCat("killing ", task.spec->name, " (pid ",
                           task.process->pid(), ") ", why));
      task.process->Signal(SIGKILL);
    }
  }

  void CheckDeadlines(double now) {
    if (stopping_) {
      if (!killed_ && now >= kill_at_) {
        KillRemaining(absl::StrCat("as it did not stop within ",
                                   options_.grace_secs, " s of SIGTERM"));
      }
      return;
    }
    // Once every worker is done, the ps tasks should end by themselves.
    std::vector<std::string> ps_running;
    for (Task& task : tasks_) {
      const bool running =
          task.process != nullptr && !task.process->wait_status().has_value();
      if (!running) continue;
      if (task.spec->job != "ps") return;
      ps_running.push_back(task.spec->name);
    }
    if (ps_deadline_ < 0) ps_deadline_ = now + options_.ps_exit_secs;
    if (now < ps_deadline_) return;
    Message(absl::StrCat(
        absl::StrJoin(ps_running, ", "), " still running ",
        options_.ps_exit_secs,
        " s after the workers finished (the program does not end its ps "
        "tasks): stopping ",
        ps_running.size() == 1 ? "it" : "them"));
    StopAll(now);
  }

  const SupervisorOptions& options_;
  Console* console_;
  LinePrefixer prefixer_;
  ProgressMeter meter_;
  StopSignals signals_;
  std::vector<Task> tasks_;
  std::optional<int> exit_code_;
  bool stopping_ = false;
  bool signalled_ = false;
  bool killed_ = false;
  double kill_at_ = 0;
  double ps_deadline_ = -1;
};

}  // namespace

int RunLocalCluster(const SupervisorOptions& options, Console* console) {
  LocalClusterRun run(options, console);
  const int code = run.Run();
  console->Finish();
  return code;
}

}  // namespace tools
}  // namespace distflow
