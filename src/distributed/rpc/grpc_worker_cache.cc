#include "distributed/rpc/grpc_worker_cache.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/local_socket.h"
#include "graph/device_name.h"

namespace distflow {
namespace {

struct TaskChannel {
  std::shared_ptr<grpc::Channel> channel;
  bool settled = true;
};

// The channel to `task` at `address`: its Unix socket if it is on this host,
// listens there and says it is `task`; TCP otherwise.
TaskChannel NewTaskChannel(const std::string& address, const std::string& task,
                           bool local_socket) {
  if (!local_socket) return {NewChannel(address), true};
  if (auto channel = NewLocalSocketChannel(address, task)) {
    return {std::move(channel), true};
  }
  // A task that is up without a Unix socket (or on another host) stays on
  // TCP; one of this host that is not up yet may still open one.
  return {NewChannel(address),
          !IsLocalAddress(address) || TcpListening(address)};
}

}  // namespace

std::string TaskName(const std::string& job, int task_index) {
  return absl::StrCat("/job:", job, "/replica:0/task:", task_index);
}

GrpcWorkerCache::GrpcWorkerCache(ClusterMap cluster, std::string local_task,
                                 WorkerInterface* local_worker,
                                 RpcDeadlines deadlines, PushPaths paths,
                                 CompletionQueueThreads* threads,
                                 bool local_socket)
    : local_task_(std::move(local_task)),
      local_worker_(local_worker),
      deadlines_(deadlines),
      paths_(paths),
      threads_(threads),
      local_socket_(local_socket),
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
  {
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
    if (it != workers_.end() && it->second.settled) {
      return it->second.worker.get();
    }
  }
  // Outside the lock: finding the Unix socket takes a round trip.
  TaskChannel channel = NewTaskChannel(address, task, local_socket_);
  absl::MutexLock lock(&mu_);
  auto it = workers_.find(task);
  if (it != workers_.end()) {
    if (it->second.settled || !channel.settled) return it->second.worker.get();
    retired_.push_back(std::move(it->second.worker));
    workers_.erase(it);
  }
  auto worker = NewGrpcRemoteWorker(std::move(channel.channel), task, address,
                                    deadlines_, paths_, threads_);
  WorkerInterface* raw = worker.get();
  workers_[task] = Remote{std::move(worker), channel.settled};
  return raw;
}

void GrpcWorkerCache::SetLocalWorker(WorkerInterface* worker) {
  absl::MutexLock lock(&mu_);
  local_worker_ = worker;
}

void GrpcWorkerCache::SetCluster(ClusterMap cluster) {
  absl::MutexLock lock(&mu_);
  cluster_ = std::move(cluster);
  for (auto& [task, remote] : workers_) {
    retired_.push_back(std::move(remote.worker));
  }
  workers_.clear();
}

}  // namespace distflow
