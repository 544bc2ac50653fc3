// The gRPC face of a Worker, on gRPC's completion-queue API: each call is
// handed to the worker on the polling thread that received it (no thread of
// either waits for a step).
#ifndef DISTFLOW_DISTRIBUTED_RPC_GRPC_WORKER_SERVICE_H_
#define DISTFLOW_DISTRIBUTED_RPC_GRPC_WORKER_SERVICE_H_

#include <memory>

#include "distributed/rpc/async_service.h"
#include "distributed/rpc/data_listener.h"
#include "distributed/rpc/recv_buffer_pool.h"
#include "distributed/worker.h"

namespace distflow {

// `worker` is not owned and outlives the service. Tensors pushed by the
// same-host path are read from their sender only if `same_host_reads` is set
// (else the sender is told to push the bytes).
// Pushed tensors are received into `pool`'s buffers (none: fresh ones), and
// read by the same-host path if `same_host_reads`. With `data_listener` (not
// owned, may be null), the answer to a large push tells the sender where to
// open a data connection (the listener is made then).
std::unique_ptr<AsyncService> NewGrpcWorkerService(
    Worker* worker, bool same_host_reads = true,
    std::shared_ptr<RecvBufferPool> pool = nullptr,
    LazyDataListener* data_listener = nullptr);

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_GRPC_WORKER_SERVICE_H_
