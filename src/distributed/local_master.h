// The masters of the servers in this process, by target ("grpc://host:port"),
// so that a session opened on a task of its own process calls that task's
// master directly instead of through gRPC (between-graph replication: every
// worker's session targets its own server).
#ifndef DISTFLOW_DISTRIBUTED_LOCAL_MASTER_H_
#define DISTFLOW_DISTRIBUTED_LOCAL_MASTER_H_

#include <memory>
#include <string>

#include "distributed/master.h"

namespace distflow {

// Thread-safe. A server registers its master once it serves and unregisters
// it before it stops; sessions hold only weak references.
void RegisterLocalMaster(const std::string& target,
                         std::weak_ptr<Master> master);
void UnregisterLocalMaster(const std::string& target);
// The master serving `target` in this process, or null.
std::shared_ptr<Master> FindLocalMaster(const std::string& target);

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_LOCAL_MASTER_H_
