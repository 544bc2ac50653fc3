// The sending end of a data connection (data_socket.h): pushes large tensors
// to one task over a TCP connection of their own.
//
// Two threads per connection: a writer, which connects, says hello, and
// then writes each queued push from the tensor's own buffer; and a reader,
// which takes the task's answers and ends pushes past their deadline. A push
// fails alone when the task refuses it or its deadline passes; when the
// connection breaks, every push still waiting fails with UNAVAILABLE naming
// the task and its address, and the connection takes no more (the caller
// pushes over gRPC, whose answer may offer a new one).
#ifndef DISTFLOW_DISTRIBUTED_RPC_DATA_CONNECTION_H_
#define DISTFLOW_DISTRIBUTED_RPC_DATA_CONNECTION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "distflow/tensor.h"
#include "distributed/worker_interface.h"

namespace distflow {

class DataConnection {
 public:
  enum class State {
    kConnecting,
    kReady,
    // Never connected (the port is not reachable, or another server holds
    // it): see failure().
    kRefused,
    // Connected, then broke: see failure().
    kBroken,
  };

  // Starts connecting to `port` on `host` (the host of the task's gRPC
  // address), opening with `token`. `task` and `address` name the peer in
  // errors.
  DataConnection(std::string host, int port, uint64_t token, std::string task,
                 std::string address);
  // Fails the pushes still waiting with CANCELLED and waits for the threads
  // (but not for a writer still connecting: see the definition).
  ~DataConnection();
  DataConnection(const DataConnection&) = delete;
  DataConnection& operator=(const DataConnection&) = delete;

  State state() const;
  // Why the connection was refused or broke (empty before).
  std::string failure() const;

  // Queues a push of `value` (of a fixed-size type) under `key` in step
  // `step_id`, if the connection is ready; false otherwise, and `done` is
  // left to the caller. `done` gets the task's answer, or the failure; it
  // runs on one of the connection's threads (or the destructor's caller),
  // never on the caller of Push. The tensor is referenced until its bytes
  // are written.
  bool Push(int64_t step_id, const std::string& key, const Tensor& value,
            absl::Duration deadline, StatusCallback&& done);

  // Pushes answered so far (for tests).
  int64_t answered() const;

 private:
  struct Core;
  static void WriteLoop(std::shared_ptr<Core> core);
  static void ReadLoop(std::shared_ptr<Core> core);

  std::shared_ptr<Core> core_;
  std::thread writer_;
  std::thread reader_;
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_DATA_CONNECTION_H_
