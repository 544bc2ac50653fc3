// What a master (or another worker) can ask of a task's worker, wherever it
// runs: in this process (distributed/worker.h) or behind gRPC
// (distributed/rpc/grpc_remote_worker.h).
//
// Every method is asynchronous: it returns at once and calls `done` exactly
// once, on some thread, when the response is filled in or with the error.
// Requests and responses are owned by the caller and must live until `done`
// runs. Errors from a remote task name its address. Thread-safe.
#ifndef DISTFLOW_DISTRIBUTED_WORKER_INTERFACE_H_
#define DISTFLOW_DISTRIBUTED_WORKER_INTERFACE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "distflow/tensor.h"
#include "proto/worker.pb.h"

namespace distflow {

using StatusCallback = std::function<void(const absl::Status&)>;

class WorkerInterface {
 public:
  virtual ~WorkerInterface() = default;

  virtual void GetStatusAsync(const proto::GetStatusRequest* request,
                              proto::GetStatusResponse* response,
                              StatusCallback done) = 0;
  virtual void RegisterGraphAsync(const proto::RegisterGraphRequest* request,
                                  proto::RegisterGraphResponse* response,
                                  StatusCallback done) = 0;
  virtual void DeregisterGraphAsync(
      const proto::DeregisterGraphRequest* request,
      proto::DeregisterGraphResponse* response, StatusCallback done) = 0;
  virtual void RunGraphAsync(const proto::RunGraphRequest* request,
                             proto::RunGraphResponse* response,
                             StatusCallback done) = 0;
  // RunGraph with the feeds and fetches as tensors. `request` holds all but
  // the feeds; `fetches` (owned by the caller) receives num_fetches entries,
  // uninitialized for fetches of other partitions. An in-process worker
  // passes the tensors without copies; the default encodes them into the
  // request and decodes the response.
  virtual void RunGraphWithTensorsAsync(const proto::RunGraphRequest* request,
                                        std::vector<Tensor> feeds,
                                        std::vector<Tensor>* fetches,
                                        StatusCallback done);
  // As RunGraphWithTensorsAsync, but returns when the partition has run. For
  // a caller that would only wait: the calling thread does the waiting work
  // itself (a remote worker reads the reply on it; an in-process worker runs
  // the partition's first ops on it), which saves the hand-over from another
  // thread per step. The default calls RunGraphWithTensorsAsync and waits.
  virtual absl::Status RunGraphWithTensors(
      const proto::RunGraphRequest* request, std::vector<Tensor> feeds,
      std::vector<Tensor>* fetches);
  virtual void AbortStepAsync(const proto::AbortStepRequest* request,
                              proto::AbortStepResponse* response,
                              StatusCallback done) = 0;
  // Delivers `value`, sent under `key` in step `step_id`, to this worker's
  // rendezvous for that step. `done` runs once the worker holds the value.
  // (By value: a caller that moves its tensor in keeps no reference while
  // the value's consumers run.)
  virtual void PushTensorAsync(int64_t step_id, const std::string& key,
                               Tensor value, StatusCallback done) = 0;
  virtual void ShutdownAsync(const proto::ShutdownRequest* request,
                             proto::ShutdownResponse* response,
                             StatusCallback done) = 0;
};

// For implementations that send feeds and fetches as TensorProto: adds
// `feeds` to `request`, and decodes the response's first `num_fetches`
// fetches into `fetches` (uninitialized where another partition makes the
// fetch).
void AddRunGraphFeeds(const std::vector<Tensor>& feeds,
                      proto::RunGraphRequest* request);
// Starts an asynchronous call (`call` passes its callback on) and blocks
// until the callback runs; its status. The wait is as bounded as the call:
// every remote call has a deadline of its own.
absl::Status CallAndWait(const std::function<void(StatusCallback)>& call);
absl::Status DecodeRunGraphFetches(const proto::RunGraphResponse& response,
                                   int num_fetches,
                                   std::vector<Tensor>* fetches);

// Task name ("/job:ps/replica:0/task:0") -> its worker.
class WorkerCacheInterface {
 public:
  virtual ~WorkerCacheInterface() = default;
  // The worker of `task` (owned by the cache, valid as long as it);
  // INVALID_ARGUMENT naming the task if the cluster has no such task.
  virtual absl::StatusOr<WorkerInterface*> GetWorker(
      const std::string& task) = 0;
  // "host:port" of `task`, or "" if unknown (for error messages).
  virtual std::string AddressOf(const std::string& task) = 0;
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_WORKER_INTERFACE_H_
