// Server::Create from a ClusterSpec (kept apart so that programs that only
// open grpc:// sessions do not need the cluster code).
#include "distflow/server.h"

#include "distributed/rpc/grpc_server.h"

namespace distflow {

absl::StatusOr<std::unique_ptr<Server>> Server::Create(
    const ClusterSpec& cluster, const std::string& job_name, int task_index,
    const ServerOptions& options) {
  ClusterMap map;
  for (const std::string& job : cluster.jobs()) map[job] = cluster.tasks(job);
  auto server =
      GrpcServer::Create(std::move(map), job_name, task_index, options);
  if (!server.ok()) return server.status();
  return std::unique_ptr<Server>(std::move(*server));
}

}  // namespace distflow
