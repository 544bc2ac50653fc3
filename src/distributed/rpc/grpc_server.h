// The gRPC server of one task (the implementation of distflow::Server).
#ifndef DISTFLOW_DISTRIBUTED_RPC_GRPC_SERVER_H_
#define DISTFLOW_DISTRIBUTED_RPC_GRPC_SERVER_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "base/thread_pool.h"
#include "distflow/server.h"
#include "distributed/master.h"
#include "distributed/rpc/async_service.h"
#include "distributed/rpc/completion_queue_threads.h"
#include "distributed/rpc/data_listener.h"
#include "distributed/rpc/grpc_worker_service.h"
#include "distributed/rpc/grpc_worker_cache.h"
#include "distributed/worker.h"
#include "grpcpp/grpcpp.h"

namespace distflow {

// How the threads of task `task_index` of `job_name` wait for work, by
// `options.idle_threads` (kAuto: they sleep at once when another task of
// `cluster` runs on the same host, loopback names counting as one).
ThreadPool::IdleWait IdleWaitOfTask(const ServerOptions& options,
                                    const ClusterMap& cluster,
                                    const std::string& job_name,
                                    int task_index);

class GrpcServer : public Server {
 public:
  // As Server::Create, from job name -> addresses.
  static absl::StatusOr<std::unique_ptr<GrpcServer>> Create(
      ClusterMap cluster, const std::string& job_name, int task_index,
      const ServerOptions& options = {});
  ~GrpcServer() override;

  std::string target() const override;
  int port() const override { return port_; }
  absl::Status Join() override;
  absl::Status Stop() override;

  // The cluster's addresses as this task knows them (its own with the bound
  // port).
  ClusterMap cluster() const;
  // Tells the task the final addresses of the others (for tasks started on
  // port 0, such as in tests).
  void SetCluster(ClusterMap cluster);

  // The port this task takes data connections on (0: none, or none yet: the
  // listener is made when the first push or RunGraph call arrives over
  // gRPC).
  int data_port() const {
    return data_listener_ != nullptr ? data_listener_->port() : 0;
  }
  // Tensors received (their bytes read), RunGraph calls taken, and readings
  // handed on to a new thread (a call's work kept the reader: see
  // data_listener.h) on data connections so far.
  int64_t data_tensors_received() const {
    return data_listener_ != nullptr ? data_listener_->received() : 0;
  }
  // Of those, the ones whose bytes came partly on stripes (data_socket.h).
  int64_t data_tensors_striped() const {
    return data_listener_ != nullptr ? data_listener_->striped() : 0;
  }
  int64_t data_run_graphs() const {
    return data_listener_ != nullptr ? data_listener_->run_graphs() : 0;
  }
  int64_t data_reader_handoffs() const {
    return data_listener_ != nullptr ? data_listener_->handoffs() : 0;
  }
  Worker* worker() { return worker_.get(); }
  Master* master() { return master_.get(); }
  const std::string& task_name() const { return task_name_; }

 private:
  GrpcServer(ClusterMap cluster, std::string job_name, int task_index,
             const ServerOptions& options);
  absl::Status Start();

  const std::string job_name_;
  const int task_index_;
  const std::string task_name_;
  const ServerOptions options_;
  std::string host_;
  int port_ = 0;

  // How the pools' idle threads wait (IdleWaitOfTask).
  const ThreadPool::IdleWait idle_wait_;
  ThreadPool inter_op_pool_;
  ThreadPool intra_op_pool_;
  ThreadPool master_pool_;
  mutable absl::Mutex mu_;
  ClusterMap cluster_ ABSL_GUARDED_BY(mu_);
  // The queue of every call this task serves or makes, and the threads that
  // poll it (declared before their users: destroyed after them).
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::unique_ptr<CompletionQueueThreads> rpc_threads_;
  std::unique_ptr<GrpcWorkerCache> worker_cache_;
  std::unique_ptr<Worker> worker_;
  // Shared with sessions of this process that call it directly.
  std::shared_ptr<Master> master_;
  // Where pushed tensors are received into: gRPC's pushes and data
  // connections share it.
  std::shared_ptr<RecvBufferPool> recv_pool_;
  std::unique_ptr<GrpcWorkerService> worker_service_;
  // Data connections from other tasks (null when off), the worker service's.
  LazyDataListener* data_listener_ = nullptr;
  std::unique_ptr<AsyncService> master_service_;
  // The client streams of remote steps.
  std::unique_ptr<AsyncService> master_stream_service_;
  std::unique_ptr<grpc::Server> server_;
  // Stop requested (by Stop or over RPC); Stop started; Stop finished.
  bool stop_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // Set when the job is done (EndJobOnTask): Join stops the server once no
  // step has run for this long. Infinite until then.
  absl::Duration end_grace_ ABSL_GUARDED_BY(mu_) = absl::InfiniteDuration();
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_GRPC_SERVER_H_
