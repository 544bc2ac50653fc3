#include "distributed/master.h"

#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"

namespace distflow {
namespace {

constexpr char kSessionLost[] =
    "its task restarted after the session was created, and the session was "
    "lost with the task's earlier process";

std::string NewIncarnation() {
  std::random_device rd;
  const uint64_t high = rd(), low = rd();
  return absl::StrFormat("%016x", (high << 32) | low);
}

}  // namespace

bool IsSessionLost(const absl::Status& status) {
  return absl::IsAborted(status) &&
         absl::StrContains(status.message(), kSessionLost);
}

Master::Master(MasterEnv env)
    : env_(std::move(env)), incarnation_(NewIncarnation()) {}

Master::~Master() {
  absl::flat_hash_map<std::string, std::shared_ptr<MasterSession>> sessions;
  {
    absl::MutexLock lock(&mu_);
    sessions.swap(sessions_);
  }
  for (auto& [handle, session] : sessions) (void)session->Close();
}

absl::StatusOr<std::string> Master::CreateSession(
    const proto::GraphDef& graph) {
  std::string handle;
  {
    absl::MutexLock lock(&mu_);
    handle = absl::StrCat("session_", next_session_++, "_", incarnation_);
  }
  auto session = std::make_shared<MasterSession>(&env_, handle);
  DF_RETURN_IF_ERROR(session->Extend(graph));
  absl::MutexLock lock(&mu_);
  sessions_.emplace(handle, std::move(session));
  return handle;
}

absl::StatusOr<std::shared_ptr<MasterSession>> Master::Find(
    const std::string& handle) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(handle);
  if (it == sessions_.end()) {
    if (!absl::EndsWith(handle, absl::StrCat("_", incarnation_))) {
      return absl::AbortedError(absl::StrCat(
          "the master of task ", env_.task_name, " has no session '", handle,
          "': ", kSessionLost, "; create a new session"));
    }
    return absl::NotFoundError(absl::StrCat("the master of task ",
                                            env_.task_name, " has no session '",
                                            handle, "': it was closed"));
  }
  return it->second;
}

absl::Status Master::ExtendSession(const std::string& handle,
                                   const proto::GraphDef& graph) {
  DF_ASSIGN_OR_RETURN(auto session, Find(handle));
  return session->Extend(graph);
}

absl::StatusOr<std::vector<Tensor>> Master::RunStep(
    const std::string& handle,
    const std::vector<std::pair<std::string, Tensor>>& feeds,
    const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets) {
  DF_ASSIGN_OR_RETURN(auto session, Find(handle));
  return session->Run(feeds, fetches, targets);
}

absl::Status Master::CloseSession(const std::string& handle) {
  std::shared_ptr<MasterSession> session;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(handle);
    if (it == sessions_.end()) return absl::OkStatus();
    session = std::move(it->second);
    sessions_.erase(it);
  }
  return session->Close();
}

}  // namespace distflow
