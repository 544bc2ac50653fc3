// A gRPC service whose calls arrive on a server's completion queue.
#ifndef DISTFLOW_DISTRIBUTED_RPC_ASYNC_SERVICE_H_
#define DISTFLOW_DISTRIBUTED_RPC_ASYNC_SERVICE_H_

#include "distributed/rpc/completion_queue_threads.h"
#include "grpcpp/grpcpp.h"

namespace distflow {

// A service whose calls arrive on a server's completion queue.
class AsyncService {
 public:
  virtual ~AsyncService() = default;
  // What to register with the grpc::ServerBuilder.
  virtual grpc::Service* service() = 0;
  // Once the server has started: waits for calls on `cq`, whose events
  // `threads` deliver (both outlive the service's calls).
  virtual void Start(grpc::ServerCompletionQueue* cq,
                     CompletionQueueThreads* threads) = 0;
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_ASYNC_SERVICE_H_
