// The client side of MasterStreamService.RunStep: one step of a remote
// session, its feeds streamed to the master and its fetches streamed back
// (tensor_stream.h), so that tensors of any size travel without protobuf
// copies.
#ifndef DISTFLOW_DISTRIBUTED_RPC_MASTER_STREAM_CLIENT_H_
#define DISTFLOW_DISTRIBUTED_RPC_MASTER_STREAM_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "distflow/tensor.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"

namespace distflow {

class MasterStreamClient {
 public:
  // Calls the master at `address` over `channel`.
  MasterStreamClient(std::shared_ptr<grpc::Channel> channel,
                     std::string address);

  // Runs one step of session `handle` and returns the fetches in order.
  // Blocks this thread (which drives the call itself: no hand-over to
  // another thread) for at most `deadline_ms`. Errors name the master's
  // address where the transport failed, and the feed or fetch at fault.
  // Thread-safe.
  absl::StatusOr<std::vector<Tensor>> RunStep(
      const std::string& handle,
      const std::vector<std::pair<std::string, Tensor>>& feeds,
      const std::vector<std::string>& fetches,
      const std::vector<std::string>& targets, int64_t deadline_ms);

 private:
  grpc::GenericStub stub_;
  const std::string address_;
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_MASTER_STREAM_CLIENT_H_
