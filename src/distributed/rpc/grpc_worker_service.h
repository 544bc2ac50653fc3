// The gRPC face of a Worker: each RPC is handed to the worker
// asynchronously (no gRPC thread waits for a step).
#ifndef DISTFLOW_DISTRIBUTED_RPC_GRPC_WORKER_SERVICE_H_
#define DISTFLOW_DISTRIBUTED_RPC_GRPC_WORKER_SERVICE_H_

#include <memory>

#include "distributed/worker.h"
#include "grpcpp/grpcpp.h"

namespace distflow {

// `worker` is not owned and outlives the service. Tensors pushed by the
// same-host path are read from their sender only if `same_host_reads` is set
// (else the sender is told to push the bytes).
std::unique_ptr<grpc::Service> NewGrpcWorkerService(
    Worker* worker, bool same_host_reads = true);

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_GRPC_WORKER_SERVICE_H_
