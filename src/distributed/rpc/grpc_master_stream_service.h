// MasterStreamService: RunStep with feeds and fetches of any size, their
// bytes carried raw in a stream of messages each way (tensor_stream.h,
// docs/formats.md). Steps run on `pool`, never on gRPC's own threads.
#ifndef DISTFLOW_DISTRIBUTED_RPC_GRPC_MASTER_STREAM_SERVICE_H_
#define DISTFLOW_DISTRIBUTED_RPC_GRPC_MASTER_STREAM_SERVICE_H_

#include <memory>

#include "base/thread_pool.h"
#include "distributed/master.h"
#include "grpcpp/grpcpp.h"

namespace distflow {

// `master` and `pool` are not owned and outlive the service.
std::unique_ptr<grpc::Service> NewGrpcMasterStreamService(Master* master,
                                                          ThreadPool* pool);

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_GRPC_MASTER_STREAM_SERVICE_H_
