// The gRPC face of a Worker: each RPC is handed to the worker
// asynchronously (no gRPC thread waits for a step).
#ifndef DISTFLOW_DISTRIBUTED_RPC_GRPC_WORKER_SERVICE_H_
#define DISTFLOW_DISTRIBUTED_RPC_GRPC_WORKER_SERVICE_H_

#include <memory>

#include "distributed/worker.h"
#include "grpcpp/grpcpp.h"

namespace distflow {

// `worker` is not owned and outlives the service.
std::unique_ptr<grpc::Service> NewGrpcWorkerService(Worker* worker);

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_GRPC_WORKER_SERVICE_H_
