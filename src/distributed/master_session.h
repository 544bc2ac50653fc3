// A session on a task's master: the client's graph, placed on the cluster,
// partitioned by task and run by the tasks' workers.
#ifndef DISTFLOW_DISTRIBUTED_MASTER_SESSION_H_
#define DISTFLOW_DISTRIBUTED_MASTER_SESSION_H_

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/cancellation.h"
#include "distflow/tensor.h"
#include "distributed/worker_interface.h"
#include "graph/graph.h"
#include "proto/graph.pb.h"

namespace distflow {

struct MasterEnv {
  // This task: "/job:worker/replica:0/task:0", its job and index. Nodes that
  // request no device run here, and so do feeds and fetches.
  std::string task_name;
  std::string job_name;
  int task_index = 0;
  // The cluster: job name -> number of tasks.
  std::map<std::string, int> jobs;
  // Not owned; outlives the master.
  WorkerCacheInterface* worker_cache = nullptr;
  // How long a session of a client in another process may go without a
  // word from it before the master closes it (Master::KeepSession); zero:
  // never.
  absl::Duration remote_session_timeout = absl::ZeroDuration();
};

// Thread-safe: Run may be called from several threads at once.
class MasterSession {
 public:
  // `env` is not owned and outlives the session. `master_incarnation` is
  // that of the Master that makes the session (sent with each registration).
  MasterSession(const MasterEnv* env, std::string handle,
                std::string master_incarnation);
  ~MasterSession();

  const std::string& handle() const { return handle_; }

  // Adds nodes to the graph; on error the graph is unchanged.
  absl::Status Extend(const proto::GraphDef& graph);
  // Runs one step on every task the call needs. The first call of a
  // signature (feeds, fetches, targets) places and partitions the graph and
  // registers each partition with its task's worker; later calls reuse the
  // registration. If a partition fails, or a task whose partition has ended
  // dies or restarts while others still run (checked once a second), the
  // step is aborted on every task and the first error returned (UNAVAILABLE
  // naming the address of a dead task, ABORTED naming a restarted one).
  // Cancelling `cancel` (if given) aborts the step the same way, with
  // CANCELLED.
  absl::StatusOr<std::vector<Tensor>> Run(
      const std::vector<std::pair<std::string, Tensor>>& feeds,
      const std::vector<std::string>& fetches,
      const std::vector<std::string>& targets,
      CancellationManager* cancel = nullptr);
  // Deregisters every partition (best effort) and refuses later runs.
  absl::Status Close();

 private:
  struct Partition {
    std::string task;
    WorkerInterface* worker = nullptr;
    std::string graph_handle;
    uint64_t incarnation = 0;
  };
  struct Registration {
    std::vector<Partition> partitions;
  };

  absl::StatusOr<std::shared_ptr<const Registration>> GetRegistration(
      const std::vector<std::pair<std::string, Tensor>>& feeds,
      const std::vector<std::string>& fetches,
      const std::vector<std::string>& targets, std::string* key);
  absl::StatusOr<std::shared_ptr<const Registration>> Register(
      std::unique_ptr<Graph> call_graph);
  absl::Status RunPartitions(const Registration& registration,
                             const std::vector<Tensor>& args, int num_fetches,
                             CancellationManager* cancel,
                             std::vector<Tensor>* fetched);
  void Deregister(const Registration& registration);
  int64_t NewStepId();

  const MasterEnv* const env_;
  const std::string handle_;
  const std::string master_incarnation_;

  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  Graph graph_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<const Registration>>
      registrations_ ABSL_GUARDED_BY(mu_);
  std::mt19937_64 step_ids_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_MASTER_SESSION_H_
