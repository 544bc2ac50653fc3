// Task name -> worker: the local worker in-process, every other task over
// gRPC (one channel per task, made on first use).
#ifndef DISTFLOW_DISTRIBUTED_RPC_GRPC_WORKER_CACHE_H_
#define DISTFLOW_DISTRIBUTED_RPC_GRPC_WORKER_CACHE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "distributed/rpc/grpc_remote_worker.h"
#include "distributed/worker_interface.h"

namespace distflow {

// Job name -> task addresses in index order.
using ClusterMap = std::map<std::string, std::vector<std::string>>;

// "/job:<job>/replica:0/task:<i>"
std::string TaskName(const std::string& job, int task_index);

class GrpcWorkerCache : public WorkerCacheInterface {
 public:
  // `local_worker` (not owned, may be null) serves `local_task`. Remote
  // workers push large tensors by `paths`, and complete their calls on
  // `threads` (not owned; see NewGrpcRemoteWorker). With
  // `local_socket`, a task of this host that listens on its Unix socket
  // (local_socket.h) and answers there with its own task name is reached on
  // it; every other task over TCP. Errors name the TCP address either way.
  GrpcWorkerCache(ClusterMap cluster, std::string local_task,
                  WorkerInterface* local_worker, RpcDeadlines deadlines = {},
                  PushPaths paths = {},
                  CompletionQueueThreads* threads = nullptr,
                  bool local_socket = false);

  absl::StatusOr<WorkerInterface*> GetWorker(const std::string& task) override;
  std::string AddressOf(const std::string& task) override;

  // Sets the worker that serves the local task (not owned; call before use).
  void SetLocalWorker(WorkerInterface* worker);

  // Replaces the addresses (tasks that were started on port 0 and learned
  // their ports later); drops channels to tasks whose address changed.
  void SetCluster(ClusterMap cluster);

 private:
  const std::string local_task_;
  WorkerInterface* local_worker_ ABSL_GUARDED_BY(mu_);
  const RpcDeadlines deadlines_;
  const PushPaths paths_;
  CompletionQueueThreads* const threads_;
  const bool local_socket_;
  absl::Mutex mu_;
  ClusterMap cluster_ ABSL_GUARDED_BY(mu_);
  struct Remote {
    std::unique_ptr<WorkerInterface> worker;
    // False while the task is not up yet, so that it is not known whether it
    // has a Unix socket: the next GetWorker looks again.
    bool settled = true;
  };
  // Workers stay alive as long as the cache: callers hold raw pointers.
  absl::flat_hash_map<std::string, Remote> workers_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<WorkerInterface>> retired_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_GRPC_WORKER_CACHE_H_
