// The master of one task: creates sessions for clients and runs their steps
// on the cluster (distributed/master_session.h).
#ifndef DISTFLOW_DISTRIBUTED_MASTER_H_
#define DISTFLOW_DISTRIBUTED_MASTER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "distributed/master_session.h"

namespace distflow {

// Thread-safe. Calls block until done (the gRPC service runs them off its
// completion threads).
class Master {
 public:
  explicit Master(MasterEnv env);
  ~Master();

  const MasterEnv& env() const { return env_; }

  // A new session holding `graph`; returns its handle.
  absl::StatusOr<std::string> CreateSession(const proto::GraphDef& graph);
  absl::Status ExtendSession(const std::string& handle,
                             const proto::GraphDef& graph);
  absl::StatusOr<std::vector<Tensor>> RunStep(
      const std::string& handle,
      const std::vector<std::pair<std::string, Tensor>>& feeds,
      const std::vector<std::string>& fetches,
      const std::vector<std::string>& targets);
  absl::Status CloseSession(const std::string& handle);

 private:
  // The open session `handle`. ABORTED (see IsSessionLost) for a handle made
  // by an earlier process of this task, NOT_FOUND for one closed here.
  absl::StatusOr<std::shared_ptr<MasterSession>> Find(
      const std::string& handle);

  const MasterEnv env_;
  // Random, ends every handle this master makes: a handle that does not end
  // with it comes from an earlier process of the task.
  const std::string incarnation_;
  absl::Mutex mu_;
  int64_t next_session_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<std::string, std::shared_ptr<MasterSession>> sessions_
      ABSL_GUARDED_BY(mu_);
};

// Whether `status` says that a master no longer has a session because its
// task restarted since the session was created (the sessions went with the
// old process). It is ABORTED, the code of failures that a new session
// outlasts, and is recognized by its message because only the code and the
// message cross an RPC.
bool IsSessionLost(const absl::Status& status);

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_MASTER_H_
