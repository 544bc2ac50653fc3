#include "distributed/master.h"

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "base/logging.h"
#include "base/status_macros.h"

namespace distflow {
namespace {

constexpr char kSessionLost[] =
    "its task restarted after the session was created, and the session was "
    "lost with the task's earlier process";

// 96 random bits in fixed-width hex, which tell this process of the task
// from every other. Workers compare incarnations for equality only
// (Worker::AdmitMaster): no clock, however set, orders two processes.
std::string NewIncarnation() {
  std::random_device rd;
  return absl::StrFormat("%08x%08x%08x", static_cast<uint32_t>(rd()),
                         static_cast<uint32_t>(rd()),
                         static_cast<uint32_t>(rd()));
}

}  // namespace

bool IsSessionLost(const absl::Status& status) {
  return absl::IsAborted(status) &&
         absl::StrContains(status.message(), kSessionLost);
}

Master::Master(MasterEnv env)
    : env_(std::move(env)), incarnation_(NewIncarnation()) {
  if (env_.remote_session_timeout > absl::ZeroDuration()) {
    expiry_thread_ = std::thread([this] { ExpireSilentSessions(); });
  }
}

Master::~Master() {
  absl::flat_hash_map<std::string, OpenSession> sessions;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    sessions.swap(sessions_);
  }
  if (expiry_thread_.joinable()) expiry_thread_.join();
  for (auto& [handle, open] : sessions) (void)open.session->Close();
}

absl::StatusOr<std::string> Master::CreateSession(const proto::GraphDef& graph,
                                                  bool kept_alive) {
  std::string handle;
  {
    absl::MutexLock lock(&mu_);
    handle = absl::StrCat("session_", next_session_++, "_", incarnation_);
  }
  auto session = std::make_shared<MasterSession>(&env_, handle, incarnation_);
  DF_RETURN_IF_ERROR(session->Extend(graph));
  absl::MutexLock lock(&mu_);
  sessions_.emplace(handle,
                    OpenSession{std::move(session), kept_alive, SteadyNow()});
  return handle;
}

absl::Status Master::KeepSession(const std::string& handle) {
  return Find(handle).status();
}

int Master::NumSessions() {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(sessions_.size());
}

absl::StatusOr<std::shared_ptr<MasterSession>> Master::Find(
    const std::string& handle, bool starts_call) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(handle);
  if (it != sessions_.end()) {
    it->second.last_heard = SteadyNow();
    if (starts_call) ++it->second.calls_running;
    return it->second.session;
  }
  if (!absl::EndsWith(handle, absl::StrCat("_", incarnation_))) {
    return absl::AbortedError(
        absl::StrCat("the master of task ", env_.task_name, " has no session '",
                     handle, "': ", kSessionLost, "; create a new session"));
  }
  if (std::find(expired_.begin(), expired_.end(), handle) != expired_.end()) {
    return absl::AbortedError(absl::StrCat(
        "the master of task ", env_.task_name, " closed session '", handle,
        "' because its client said nothing for ",
        absl::FormatDuration(env_.remote_session_timeout),
        " (its process was stopped, or could not reach the master); create "
        "a new session"));
  }
  return absl::NotFoundError(absl::StrCat("the master of task ", env_.task_name,
                                          " has no session '", handle,
                                          "': it was closed"));
}

void Master::EndCall(const std::string& handle) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(handle);
  if (it == sessions_.end()) return;  // closed meanwhile
  it->second.last_heard = SteadyNow();
  --it->second.calls_running;
}

void Master::ExpireSilentSessions() {
  // Sessions closed for silence that a late client is still told about.
  constexpr size_t kRememberedExpired = 1024;
  const absl::Duration timeout = env_.remote_session_timeout;
  const absl::Duration period =
      std::clamp(timeout / 4, absl::Milliseconds(10), absl::Minutes(1));
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), period);
    if (stopping_) break;
    std::vector<std::pair<std::string, std::shared_ptr<MasterSession>>> silent;
    const SteadyTime now = SteadyNow();
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      const OpenSession& open = it->second;
      if (open.kept_alive && open.calls_running == 0 &&
          absl::FromChrono(now - open.last_heard) > timeout) {
        silent.emplace_back(it->first, std::move(it->second.session));
        sessions_.erase(it++);
      } else {
        ++it;
      }
    }
    for (const auto& [handle, session] : silent) {
      expired_.push_back(handle);
      if (expired_.size() > kRememberedExpired) expired_.pop_front();
    }
    if (silent.empty()) continue;
    // Closing deregisters graphs on other tasks: not under the lock.
    mu_.Unlock();
    for (const auto& [handle, session] : silent) {
      DF_LOG(Warning) << "The master of task " << env_.task_name
                      << " closes session " << handle
                      << ": its client has said nothing for "
                      << absl::FormatDuration(timeout)
                      << " (its process died or cannot reach this task).";
      (void)session->Close();
    }
    mu_.Lock();
  }
}

absl::Status Master::ExtendSession(const std::string& handle,
                                   const proto::GraphDef& graph) {
  DF_ASSIGN_OR_RETURN(auto session, Find(handle, /*starts_call=*/true));
  absl::Status s = session->Extend(graph);
  EndCall(handle);
  return s;
}

absl::StatusOr<std::vector<Tensor>> Master::RunStep(
    const std::string& handle,
    const std::vector<std::pair<std::string, Tensor>>& feeds,
    const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets, CancellationManager* cancel) {
  // A step may outlast the timeout; its session does not expire meanwhile.
  DF_ASSIGN_OR_RETURN(auto session, Find(handle, /*starts_call=*/true));
  auto out = session->Run(feeds, fetches, targets, cancel);
  EndCall(handle);
  return out;
}

absl::Status Master::CloseSession(const std::string& handle) {
  std::shared_ptr<MasterSession> session;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(handle);
    if (it == sessions_.end()) return absl::OkStatus();
    session = std::move(it->second.session);
    sessions_.erase(it);
  }
  return session->Close();
}

}  // namespace distflow
