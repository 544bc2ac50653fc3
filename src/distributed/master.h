// The master of one task: creates sessions for clients and runs their steps
// on the cluster (distributed/master_session.h).
#ifndef DISTFLOW_DISTRIBUTED_MASTER_H_
#define DISTFLOW_DISTRIBUTED_MASTER_H_

#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "base/clock.h"
#include "distributed/master_session.h"

namespace distflow {

// Thread-safe. Calls block until done (the gRPC service runs them off its
// completion threads).
class Master {
 public:
  explicit Master(MasterEnv env);
  ~Master();

  const MasterEnv& env() const { return env_; }

  // A new session holding `graph`; returns its handle. The session of a
  // client in another process that keeps it alive (`kept_alive`: the client
  // calls KeepSession) is closed once that client has said nothing (no
  // KeepSession, no call of the session started, ended or running) for
  // env.remote_session_timeout: its process died, or lost the network, and
  // would otherwise leave the session and its registered graphs behind.
  absl::StatusOr<std::string> CreateSession(const proto::GraphDef& graph,
                                            bool kept_alive = false);
  // The remote client of `handle` is alive (its session is kept).
  absl::Status KeepSession(const std::string& handle);
  absl::Status ExtendSession(const std::string& handle,
                             const proto::GraphDef& graph);
  // Runs a step of session `handle`. Cancelling `cancel` (if given; it
  // outlives the call) aborts the step on every task and returns CANCELLED:
  // the RPC services cancel it when the client's call ends first.
  absl::StatusOr<std::vector<Tensor>> RunStep(
      const std::string& handle,
      const std::vector<std::pair<std::string, Tensor>>& feeds,
      const std::vector<std::string>& fetches,
      const std::vector<std::string>& targets,
      CancellationManager* cancel = nullptr);
  absl::Status CloseSession(const std::string& handle);
  // Sessions open here.
  int NumSessions();

 private:
  struct OpenSession {
    std::shared_ptr<MasterSession> session;
    // Whether its client keeps it alive; when the client was last heard
    // from, and how many of its calls are running.
    bool kept_alive = false;
    SteadyTime last_heard;
    int calls_running = 0;
  };
  // The open session `handle`, which has just been heard from; with
  // `starts_call`, one more of its calls runs until EndCall. ABORTED for a
  // handle made by an earlier process of this task (see IsSessionLost) or
  // for a session closed because its client went silent; NOT_FOUND for one
  // its client closed.
  absl::StatusOr<std::shared_ptr<MasterSession>> Find(const std::string& handle,
                                                      bool starts_call = false);
  void EndCall(const std::string& handle);
  // Closes the remote sessions whose clients went silent, until the master
  // goes; runs on expiry_thread_.
  void ExpireSilentSessions();

  const MasterEnv env_;
  // This process of the master (see NewIncarnation in master.cc). It ends
  // every handle this master makes: a handle that does not end with it comes
  // from an earlier process of the task.
  const std::string incarnation_;
  absl::Mutex mu_;
  int64_t next_session_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<std::string, OpenSession> sessions_ ABSL_GUARDED_BY(mu_);
  // Sessions closed because their clients went silent, oldest first
  // (bounded), so that a client that comes back is told why.
  std::deque<std::string> expired_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread expiry_thread_;
};

// Whether `status` says that a master no longer has a session because its
// task restarted since the session was created (the sessions went with the
// old process). It is ABORTED, the code of failures that a new session
// outlasts, and is recognized by its message because only the code and the
// message cross an RPC.
bool IsSessionLost(const absl::Status& status);

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_MASTER_H_
