// The gRPC face of a Worker, on gRPC's completion-queue API: each call is
// handed to the worker on the polling thread that received it (no thread of
// either waits for a step).
#ifndef DISTFLOW_DISTRIBUTED_RPC_GRPC_WORKER_SERVICE_H_
#define DISTFLOW_DISTRIBUTED_RPC_GRPC_WORKER_SERVICE_H_

#include <memory>

#include "distributed/rpc/async_service.h"
#include "distributed/rpc/data_listener.h"
#include "distributed/rpc/recv_buffer_pool.h"
#include "distributed/rpc/tensor_wire.h"
#include "distributed/worker.h"

namespace distflow {

struct WorkerServiceOptions {
  // Whether tensors offered by the same-host path are read from their sender
  // (else the sender is told to push the bytes).
  bool same_host_reads = true;
  // Where pushed tensors are received into (null: fresh buffers).
  std::shared_ptr<RecvBufferPool> pool;
  // Where to listen for data connections ("": none), and the task's name for
  // its log lines. With one, the answers to pushes and RunGraph calls over
  // gRPC tell the caller where to open a data connection (the listener is
  // made then), and calls on it are served as over gRPC.
  std::string data_host;
  std::string task;
  // How long a tensor pushed in chunks may wait for its last chunk (it counts
  // against the worker's push budget meanwhile).
  absl::Duration partial_timeout = PushAssembler::kDefaultPartialTimeout;
};

class GrpcWorkerService : public AsyncService {
 public:
  // The task's data connections (null without them).
  virtual LazyDataListener* data_listener() = 0;
};

// `worker` is not owned and outlives the service.
std::unique_ptr<GrpcWorkerService> NewGrpcWorkerService(
    Worker* worker, WorkerServiceOptions options = {});

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_GRPC_WORKER_SERVICE_H_
