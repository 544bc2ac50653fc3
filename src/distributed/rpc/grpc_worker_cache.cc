#include "distributed/rpc/grpc_worker_cache.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "distributed/rpc/grpc_util.h"
#include "graph/device_name.h"

namespace distflow {

std::string TaskName(const std::string& job, int task_index) {
  return absl::StrCat("/job:", job, "/replica:0/task:", task_index);
}

GrpcWorkerCache::GrpcWorkerCache(ClusterMap cluster, std::string local_task,
                                 WorkerInterface* local_worker,
                                 RpcDeadlines deadlines, bool same_host,
                                 CompletionQueueThreads* threads)
    : local_task_(std::move(local_task)),
      local_worker_(local_worker),
      deadlines_(deadlines),
      same_host_(same_host),
      threads_(threads),
      cluster_(std::move(cluster)) {}

std::string GrpcWorkerCache::AddressOf(const std::string& task) {
  auto name = DeviceName::Parse(task);
  if (!name.ok() || !name->job || !name->task) return "";
  absl::MutexLock lock(&mu_);
  auto it = cluster_.find(*name->job);
  if (it == cluster_.end() || *name->task < 0 ||
      *name->task >= static_cast<int>(it->second.size())) {
    return "";
  }
  return it->second[*name->task];
}

absl::StatusOr<WorkerInterface*> GrpcWorkerCache::GetWorker(
    const std::string& task) {
  const std::string address = AddressOf(task);
  absl::MutexLock lock(&mu_);
  if (task == local_task_ && local_worker_ != nullptr) return local_worker_;
  if (address.empty()) {
    std::vector<std::string> jobs;
    for (const auto& [job, tasks] : cluster_) {
      jobs.push_back(absl::StrCat(job, " (", tasks.size(), " tasks)"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("the cluster has no task ", task,
                     "; its jobs are: ", absl::StrJoin(jobs, ", ")));
  }
  auto it = workers_.find(task);
  if (it != workers_.end()) return it->second.get();
  auto worker = NewGrpcRemoteWorker(NewChannel(address), task, address,
                                    deadlines_, same_host_, threads_);
  WorkerInterface* raw = worker.get();
  workers_.emplace(task, std::move(worker));
  return raw;
}

void GrpcWorkerCache::SetLocalWorker(WorkerInterface* worker) {
  absl::MutexLock lock(&mu_);
  local_worker_ = worker;
}

void GrpcWorkerCache::SetCluster(ClusterMap cluster) {
  absl::MutexLock lock(&mu_);
  cluster_ = std::move(cluster);
  for (auto& [task, worker] : workers_) retired_.push_back(std::move(worker));
  workers_.clear();
}

}  // namespace distflow
