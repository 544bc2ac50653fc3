// MasterStreamService: RunStep with feeds and fetches of any size, their
// bytes carried raw in a stream of messages each way (tensor_stream.h,
// docs/formats.md). Its calls arrive on the task's completion queue like the
// other services' (a service on gRPC's callback API would bring gRPC's own
// polling threads into the process, and they would read the other calls'
// messages too, adding a hand-over to each); steps run on `pool`, never on a
// polling thread.
#ifndef DISTFLOW_DISTRIBUTED_RPC_GRPC_MASTER_STREAM_SERVICE_H_
#define DISTFLOW_DISTRIBUTED_RPC_GRPC_MASTER_STREAM_SERVICE_H_

#include <memory>

#include "base/thread_pool.h"
#include "distributed/master.h"
#include "distributed/rpc/async_service.h"
#include "grpcpp/grpcpp.h"

namespace distflow {

// `master` and `pool` are not owned and outlive the service.
std::unique_ptr<AsyncService> NewGrpcMasterStreamService(Master* master,
                                                         ThreadPool* pool);

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_GRPC_MASTER_STREAM_SERVICE_H_
