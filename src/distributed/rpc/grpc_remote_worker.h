// A WorkerInterface that calls a task's worker service over gRPC.
#ifndef DISTFLOW_DISTRIBUTED_RPC_GRPC_REMOTE_WORKER_H_
#define DISTFLOW_DISTRIBUTED_RPC_GRPC_REMOTE_WORKER_H_

#include <memory>
#include <string>

#include "distributed/rpc/completion_queue_threads.h"
#include "distributed/worker_interface.h"
#include "grpcpp/grpcpp.h"

namespace distflow {

struct RpcDeadlines {
  // GetStatus, RegisterGraph, DeregisterGraph, AbortStep, Shutdown.
  int64_t control_ms = 30'000;
  // RunGraph (a whole step) and PushTensor (one tensor; a slow network may
  // need more for huge tensors).
  int64_t step_ms = 3'600'000;
};

// The ways a large pushed tensor may take besides gRPC.
struct PushPaths {
  // Offered to the peer by the same-host path (same_host.h), falling back to
  // the connection for good if it refuses.
  bool same_host = true;
  // Otherwise pushed on a data connection (data_connection.h) once the peer
  // offers one.
  bool data_connection = true;
  // The sockets of a data connection (DataConnection).
  int data_sockets = 1;
};

// `task` ("/job:ps/replica:0/task:0") and `address` name the peer in errors.
// Calls complete on `threads` (not owned; a server's, which outlives the
// worker's calls: see CompletionQueueThreads::Shutdown), or without it on a
// thread of the worker's own.
std::unique_ptr<WorkerInterface> NewGrpcRemoteWorker(
    std::shared_ptr<grpc::Channel> channel, const std::string& task,
    const std::string& address, const RpcDeadlines& deadlines = {},
    const PushPaths& paths = {}, CompletionQueueThreads* threads = nullptr);

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_GRPC_REMOTE_WORKER_H_
