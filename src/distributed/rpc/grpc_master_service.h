// The gRPC face of a Master, on gRPC's completion-queue API. Master calls
// block (a step runs to its end), so they run on `pool`, never on the
// threads that poll the connections.
#ifndef DISTFLOW_DISTRIBUTED_RPC_GRPC_MASTER_SERVICE_H_
#define DISTFLOW_DISTRIBUTED_RPC_GRPC_MASTER_SERVICE_H_

#include <memory>

#include "base/thread_pool.h"
#include "distributed/master.h"
#include "distributed/rpc/async_service.h"

namespace distflow {

// `master` and `pool` are not owned and outlive the service.
std::unique_ptr<AsyncService> NewGrpcMasterService(Master* master,
                                                   ThreadPool* pool);

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_GRPC_MASTER_SERVICE_H_
