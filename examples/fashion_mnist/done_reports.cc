#include "examples/fashion_mnist/done_reports.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace fashion_mnist {

namespace df = distflow;

namespace {

// How long the chief waits for the other workers to report done, and how
// long a worker that has reported waits for unreachable ps tasks to come
// back before it takes them as gone with the job.
constexpr auto kWorkersDoneTimeout = std::chrono::seconds(60);
constexpr auto kPsGoneTimeout = std::chrono::seconds(60);
constexpr auto kPollInterval = std::chrono::milliseconds(200);

// The errors of a ps task that is down (UNAVAILABLE), restarted (ABORTED: the
// session's partitions died with it) or shutting down (CANCELLED).
bool PsIsDownOrRestarted(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsAborted(s) || absl::IsCancelled(s);
}

// One look at the flag: sets it if it has no value (the first report, or the
// ps restarted since the last one). Returns whether it set it.
absl::StatusOr<bool> SetIfUnset(df::ClientSession* session,
                                const df::Output& is_set,
                                const df::ops::Variable& flag) {
  auto set = session->Run({is_set});
  if (!set.ok()) return set.status();
  if ((*set)[0].scalar<bool>()) return false;
  if (absl::Status s = session->RunTargets({flag.initializer()}); !s.ok()) {
    return s;
  }
  return true;
}

}  // namespace

DoneFlags MakeDoneFlags(const df::Scope& scope,
                        const std::vector<std::string>& replica_names) {
  DoneFlags done;
  for (size_t i = 1; i < replica_names.size(); ++i) {
    const std::string name = absl::StrCat(
        absl::StrReplaceAll(replica_names[i], {{" ", "_"}}), "_done");
    done.flags.push_back(df::ops::Variable(scope.WithOpName(name),
                                           df::Tensor::Scalar<bool>(true),
                                           df::ops::VariableOptions{false}));
    done.is_set.push_back(
        df::ops::IsVariableInitialized(scope, done.flags.back()));
  }
  done.not_done = df::ops::ReportUninitializedVariables(scope, done.flags);
  return done;
}

absl::Status ReportDoneUntilTheJobEnds(const df::Scope& root,
                                       const std::string& target,
                                       const DoneFlags& done, int replica,
                                       const std::string& replica_name) {
  const df::ops::Variable& flag = done.flags[replica - 1];
  const df::Output& is_set = done.is_set[replica - 1];
  df::SessionOptions options;
  options.target = target;
  std::unique_ptr<df::ClientSession> session;
  int reports = 0;
  // Since when the ps tasks have not answered, if they do not.
  std::optional<std::chrono::steady_clock::time_point> down_since;
  for (;;) {
    absl::Status s;
    if (session == nullptr) {
      auto created = df::ClientSession::Create(root, options);
      s = created.status();
      if (s.ok()) session = *std::move(created);
    }
    if (s.ok()) {
      auto reported = SetIfUnset(session.get(), is_set, flag);
      s = reported.status();
      if (s.ok() && *reported) {
        std::fprintf(stderr,
                     reports == 0 ? "%s: reported done; waiting for the chief "
                                    "to end the job\n"
                                  : "%s: the restarted ps had lost this "
                                    "worker's done report; reported done "
                                    "again\n",
                     replica_name.c_str());
        ++reports;
      }
    }
    if (absl::IsOutOfRange(s)) {
      // The chief ended the job: the ps tasks refuse every step now.
      std::fprintf(stderr, "%s: the job has ended%s\n", replica_name.c_str(),
                   reports == 0 ? " before this worker reported" : "");
      return absl::OkStatus();
    }
    if (!s.ok() && !PsIsDownOrRestarted(s)) return s;
    const auto now = std::chrono::steady_clock::now();
    if (s.ok()) {
      down_since.reset();
    } else {
      // A new session for the restarted ps: the old one's partitions died.
      if (session != nullptr) (void)session->Close();
      session.reset();
      if (!down_since) down_since = now;
      if (now - *down_since > kPsGoneTimeout) {
        std::fprintf(stderr,
                     "%s: the ps tasks have not answered for %lld s (%s); "
                     "taking the job as ended\n",
                     replica_name.c_str(),
                     static_cast<long long>(kPsGoneTimeout.count()),
                     s.ToString().c_str());
        return absl::OkStatus();
      }
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

absl::Status EndJobWhenOthersAreDone(df::train::RecoverableSession* session,
                                     const DoneFlags& done,
                                     const df::ClusterSpec& cluster) {
  const auto deadline = std::chrono::steady_clock::now() + kWorkersDoneTimeout;
  std::vector<std::string> not_done;
  for (;;) {
    auto out = session->Run({done.not_done});
    if (!out.ok()) return out.status();
    not_done.clear();
    for (const std::string& name : (*out)[0].flat<std::string>()) {
      not_done.push_back(name);
    }
    if (not_done.empty() || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(kPollInterval);
  }
  if (!not_done.empty()) {
    std::fprintf(stderr,
                 "%zu of the other %zu workers did not report done within "
                 "%lld s (%s); ending the job anyway\n",
                 not_done.size(), done.flags.size(),
                 static_cast<long long>(kWorkersDoneTimeout.count()),
                 absl::StrJoin(not_done, ", ").c_str());
  }
  return df::EndJob(cluster);
}

}  // namespace fashion_mnist
