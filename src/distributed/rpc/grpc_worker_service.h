// The gRPC face of a Worker, on gRPC's completion-queue API: each call is
// handed to the worker on the polling thread that received it (no thread of
// either waits for a step).
#ifndef DISTFLOW_DISTRIBUTED_RPC_GRPC_WORKER_SERVICE_H_
#define DISTFLOW_DISTRIBUTED_RPC_GRPC_WORKER_SERVICE_H_

#include <memory>

#include "distributed/rpc/async_service.h"
#include "distributed/worker.h"

namespace distflow {

// `worker` is not owned and outlives the service. Tensors pushed by the
// same-host path are read from their sender only if `same_host_reads` is set
// (else the sender is told to push the bytes).
std::unique_ptr<AsyncService> NewGrpcWorkerService(Worker* worker,
                                                   bool same_host_reads = true);

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_GRPC_WORKER_SERVICE_H_
