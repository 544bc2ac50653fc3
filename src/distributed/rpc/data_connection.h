// The calling end of a data connection (data_socket.h): sends one task the
// pushes and RunGraph calls of steps over a TCP connection of their own.
//
// Two threads per connection: a writer, which connects, says hello, and
// then writes each queued call from its message and the tensor's own buffer
// (the caller writes what the socket takes at once itself); a writer per
// stripe (data_socket.h), which writes the last parts of large pushes from
// the same buffer at the same time; and a reader,
// which takes the task's answers, hands each to its call's callback, and
// ends calls past their deadline; while calls wait on a task that has been
// silent for 2 s, it pings the task, and ends the connection if the task
// does not answer within 5 s (stopped or hung). A call fails alone when the
// task refuses it or its deadline passes; when the connection breaks, every
// call still waiting fails with UNAVAILABLE naming the task and its address,
// and the connection takes no more (the caller goes over gRPC, whose answer may
// offer a new one).
#ifndef DISTFLOW_DISTRIBUTED_RPC_DATA_CONNECTION_H_
#define DISTFLOW_DISTRIBUTED_RPC_DATA_CONNECTION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "distflow/tensor.h"
#include "distributed/worker_interface.h"
#include "proto/worker.pb.h"

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
  // address), opening with `token`, with `sockets` sockets (1 to
  // kMaxDataSockets: the first and its stripes; fewer if a stripe cannot be
  // opened). `task` and `address` name the peer in errors.
  DataConnection(std::string host, int port, uint64_t token, std::string task,
                 std::string address, int sockets = 1);
  // Fails the pushes still waiting with CANCELLED and waits for the threads
  // (but not for a writer still connecting: see the definition).
  ~DataConnection();
  DataConnection(const DataConnection&) = delete;
  DataConnection& operator=(const DataConnection&) = delete;

  State state() const;
  // Why the connection was refused or broke (empty before).
  std::string failure() const;

  // Each call is sent if the connection is ready; otherwise it returns false
  // and `done` is left to the caller. `done` gets the task's answer, or the
  // failure; it runs on one of the connection's threads (or the destructor's
  // caller), never on the caller of the method.

  // Pushes `value` (of a fixed-size type) under `key` in step `step_id`. The
  // tensor is referenced until its bytes are written.
  bool Push(int64_t step_id, const std::string& key, const Tensor& value,
            absl::Duration deadline, StatusCallback&& done);
  using OfferDone = std::function<void(const absl::Status&,
                                       const proto::PushTensorResponse&)>;
  // Offers a tensor by the same-host path: `header` (OfferSameHost) says
  // where its bytes lie in this process. `pinned` is held until the task
  // answers or the connection ends, even past the deadline: the task may be
  // reading the bytes.
  bool Offer(const proto::PushTensorHeader& header,
             std::shared_ptr<const void> pinned, absl::Duration deadline,
             OfferDone&& done);
  // Runs a step's partition: `request` carries no feeds. `response` must
  // live until `done` runs.
  bool RunGraph(const proto::RunGraphRequest& request,
                proto::RunGraphResponse* response, absl::Duration deadline,
                StatusCallback&& done);

  // Calls answered so far, and the sockets it writes on (1 until it is
  // ready), for tests.
  int64_t answered() const;
  int sockets() const;

 private:
  struct Core;
  struct Queued;
  struct Waiting;
  // Queues (and starts writing) `frame`, followed by `bytes`' bytes if it is
  // initialized, if the connection is ready; `waiting` makes its entry then
  // (so a call that is not sent keeps its callback). See the public calls.
  bool Send(proto::DataFrame& frame, const Tensor& bytes,
            absl::FunctionRef<Waiting()> make_waiting);
  static void WriteLoop(std::shared_ptr<Core> core);
  static void StripeWriteLoop(std::shared_ptr<Core> core, size_t stripe);
  static void ReadLoop(std::shared_ptr<Core> core);

  std::shared_ptr<Core> core_;
  std::thread writer_;
  std::thread reader_;
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_DATA_CONNECTION_H_
