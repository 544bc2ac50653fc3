// The receiving end of data connections (data_socket.h): a task listens on a
// TCP port of its own beside gRPC, reads each pushed tensor's bytes straight
// from the socket into the tensor's (pooled) buffer, and takes same-host
// offers and RunGraph calls.
//
// One thread accepts connections, and one per connection reads its calls in
// order and hands each to its handler, whose callback writes the answer
// (from any thread). Each stripe of a connection has a thread of its own,
// which reads the stripe's parts of pushes into the tensors that the
// connection's reader allocated. The handler's first work runs on the
// reading thread (a
// partition's first kernels, a pushed tensor's consumers), which saves a
// hand-over to another thread per call; work that keeps it longer than
// kReadingHandOff passes the reading on to a new thread, so that the calls
// behind it, and the sender's keepalive pings, are still answered. A
// connection whose hello does not carry this listener's token is refused; a
// frame that is not a call, or a push whose header does not describe a
// tensor, gets INVALID_ARGUMENT naming the tensor and ends the connection
// (its framing can no longer be trusted); a tensor that cannot be allocated
// gets RESOURCE_EXHAUSTED, and the connection goes on. A peer that stops in
// the middle of a frame or of a tensor's bytes for DataStallTimeout()
// (data_socket.h), or leaves an answer unread that long, is dropped, and so
// is one whose call throws (the call is answered INTERNAL); each drop is
// logged naming the peer's address.
// When a connection ends, the steps of its RunGraph calls still running are
// abandoned (their caller is gone). At most 512 sockets (a connection's
// stripes count) are served at once.
#ifndef DISTFLOW_DISTRIBUTED_RPC_DATA_LISTENER_H_
#define DISTFLOW_DISTRIBUTED_RPC_DATA_LISTENER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "distflow/tensor.h"
#include "distributed/rpc/data_frames.h"
#include "distributed/rpc/data_socket.h"
#include "distributed/rpc/recv_buffer_pool.h"
#include "distributed/worker_interface.h"
#include "proto/worker.pb.h"

namespace distflow {

// How long a call's work may keep the thread that reads its connection
// before another thread reads on.
inline constexpr absl::Duration kReadingHandOff = absl::Milliseconds(100);

// Before a reader sleeps waiting for its connection's next frame, it polls
// for it (yielding its core between looks) where that frame is due soon: on
// a virtual machine a sleeping reader is woken only after tens of
// microseconds (docs/benchmarks.md, "Readers that poll instead of
// sleeping"). One reader of a listener polls at a time.
//  - For up to kNextStepPoll after it answers a RunGraph call: a caller
//    that loops over steps starts the next within tens to a couple of
//    hundred microseconds. The tiny step ran 2.5 times as fast; a training
//    step of 1 ps + 1 worker 3.8% faster (docs/benchmarks.md, "Ops that stay
//    on their thread where pools sleep").
//  - For up to kNextPushPoll after it has served a tensor offered by the
//    same-host path (and run the consumers that the tensor started): in a
//    training loop the peer offers again within the rest of its step, as
//    the ps offers a worker the next step's weights a few hundred
//    microseconds after the worker offered its gradients. 1 ps + 1 worker
//    trained 3.3% faster, 1 ps + 2 workers 2.7%; a poll of 1 ms gained no
//    more. After a push whose bytes came over the connection, the reader
//    does not poll: the 4 MiB pull and push over TCP, whose copies want
//    both cores, ran about 6% slower with that poll.
//  - For up to kRunningStepPoll while a RunGraph call of the connection runs
//    and is the only one running on this listener: its step waits for the
//    caller's next push (a training step's gradients, after the caller's
//    forward and backward pass), and the caller's task is the one working
//    (the cost row's step ran 8-11% faster). With several callers running
//    steps (two workers), the poller took a core from their kernels, and
//    the reader sleeps.
inline constexpr absl::Duration kNextStepPoll = absl::Microseconds(200);
inline constexpr absl::Duration kNextPushPoll = absl::Microseconds(500);
inline constexpr absl::Duration kRunningStepPoll = absl::Milliseconds(2);

// What a listener holds for its peers.
struct DataListenerLimits {
  // Bytes of pushed tensors being received at once, on all connections: a
  // push that would take more is answered RESOURCE_EXHAUSTED (its bytes are
  // read past). Each connection receives one tensor at a time, which a
  // stalled peer holds only until DataStallTimeout() ends its connection.
  int64_t receiving_bytes = static_cast<int64_t>(kMaxTensorBytes);
};

class DataListener {
 public:
  // What the task does with each call; `done` writes the answer.
  struct Handlers {
    // A pushed tensor, read from the connection.
    std::function<void(int64_t step_id, const std::string& key, Tensor value,
                       StatusCallback done)>
        deliver;
    // A push that offers its bytes by the same-host path; `done` runs once
    // `response` is set. Without it such offers are refused
    // (INVALID_ARGUMENT).
    std::function<void(const proto::PushTensorHeader& header,
                       proto::PushTensorResponse* response,
                       StatusCallback done)>
        offer;
    // A step's RunGraph; `done` runs once `response` is set. Without it
    // RunGraph calls are refused (UNIMPLEMENTED).
    std::function<void(const proto::RunGraphRequest* request,
                       proto::RunGraphResponse* response, StatusCallback done)>
        run_graph;
    // A RunGraph still running when its connection ended.
    std::function<void(const proto::RunGraphRequest& request)> abandoned;
  };

  // Listens on a free port of `host` (a numeric address or a name; "0.0.0.0"
  // for every interface). Tensors are allocated from `pool` (may be null).
  // UNAVAILABLE naming the host when it cannot listen.
  static absl::StatusOr<std::unique_ptr<DataListener>> Create(
      const std::string& host, std::shared_ptr<RecvBufferPool> pool,
      Handlers handlers, DataListenerLimits limits = DataListenerLimits());
  // Close().
  ~DataListener();
  DataListener(const DataListener&) = delete;
  DataListener& operator=(const DataListener&) = delete;

  int port() const { return port_; }
  uint64_t token() const { return token_; }
  // Tensors received (their bytes read from a connection), RunGraph calls
  // taken, and readings handed on to a new thread so far (for tests).
  int64_t received() const { return received_.load(); }
  int64_t run_graphs() const { return run_graphs_.load(); }
  int64_t handoffs() const { return handoffs_.load(); }
  // Pushes whose bytes came partly on stripes (data_socket.h), for tests.
  int64_t striped() const { return striped_.load(); }

  // Stops accepting, ends every connection (their senders see them break)
  // and waits for the threads. Answers of pushes still being delivered are
  // dropped. Idempotent.
  void Close();

 private:
  struct Connection;
  struct Stripe;
  DataListener(int fd, int port, std::shared_ptr<RecvBufferPool> pool,
               Handlers handlers, DataListenerLimits limits);
  class Receiving;
  class Working;
  void AcceptLoop();
  // Every kReadingHandOff, gives the reading of connections whose reader is
  // busy with a call's work to a new thread.
  void WatchLoop();
  // Starts a thread that reads `connection` for its `turn` (0: the first,
  // which takes the hello); false, having ended the connection, when no
  // thread can be started.
  bool StartReader(const std::shared_ptr<Connection>& connection, uint64_t turn)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Joins the readers that ended, and lets go of connections without any.
  void ReapReaders() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Serve(const std::shared_ptr<Connection>& connection);
  // Reads calls while this thread's `turn` lasts; ends the connection when
  // it breaks.
  void ReadCalls(const std::shared_ptr<Connection>& connection, uint64_t turn);
  // Polls the connection for its next frame where one is due soon (see
  // kNextStepPoll), unless another reader is polling.
  void AwaitNextFrame(Connection& connection);
  // Reads one call and hands it over; false when the connection is done. A
  // call that throws is answered INTERNAL and ends the connection.
  bool ServeOne(const std::shared_ptr<Connection>& connection, uint64_t turn);
  bool ServeFrame(const std::shared_ptr<Connection>& connection, uint64_t turn,
                  proto::DataFrame& frame);
  bool ServePush(const std::shared_ptr<Connection>& connection, uint64_t turn,
                 const proto::DataFrame& frame);
  // Reads a push's bytes into `into` (or past them, if null): the first part
  // from the connection, the rest by `stripes`. False when the connection or
  // a stripe broke (logged naming the peer).
  bool ReceiveBytes(Connection& connection, const DataPush& push,
                    const std::vector<std::shared_ptr<Stripe>>& stripes,
                    char* into);
  // Attaches `socket`, whose hello names it a stripe, to its connection
  // (`*first`); null if there is no such connection or the stripe comes out
  // of order.
  std::shared_ptr<Stripe> AttachStripe(
      const DataHello& hello, const std::shared_ptr<Connection>& socket,
      std::shared_ptr<Connection>* first);
  // Reads the parts that the connection's reader posts to `stripe`, until
  // it ends; a stripe that breaks ends its connection.
  void ReadStripe(const std::shared_ptr<Connection>& first, Stripe& stripe);
  void ServeRunGraph(const std::shared_ptr<Connection>& connection,
                     uint64_t turn, uint64_t id,
                     proto::RunGraphRequest&& request);
  // The connection's end: the steps of its RunGraph calls still running are
  // abandoned.
  void EndConnection(const std::shared_ptr<Connection>& connection);
  // A receive buffer; RESOURCE_EXHAUSTED when there is no memory for it.
  absl::StatusOr<Tensor> Allocate(DataType dtype, const TensorShape& shape,
                                  int64_t bytes);
  // Counts `bytes` as being received, if they fit limits_.receiving_bytes.
  bool Reserve(int64_t bytes);

  const int fd_;
  const int port_;
  const uint64_t token_;
  const std::shared_ptr<RecvBufferPool> pool_;
  const Handlers handlers_;
  const DataListenerLimits limits_;
  // Bytes of the tensors being received now (see DataListenerLimits).
  std::atomic<int64_t> receiving_{0};
  std::thread acceptor_;
  std::thread watcher_;
  std::atomic<int64_t> received_{0};
  std::atomic<int64_t> run_graphs_{0};
  std::atomic<int64_t> handoffs_{0};
  std::atomic<int64_t> striped_{0};
  // Whether a reader is polling (AwaitNextFrame).
  std::atomic<bool> polling_{false};
  // The RunGraph calls running on all connections (shared with their
  // callbacks, which may outlive the listener).
  const std::shared_ptr<std::atomic<int>> running_calls_ =
      std::make_shared<std::atomic<int>>(0);
  absl::Mutex mu_;
  // Whether accept() is failing (it is logged once per episode).
  bool accept_failing_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // A thread that read, or reads, a connection; `ended` once it returns.
  struct Reader {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> ended;
  };
  struct Served {
    std::shared_ptr<Connection> connection;
    std::vector<Reader> readers;
  };
  std::vector<Served> served_ ABSL_GUARDED_BY(mu_);
  // Connections by the link id of their hello, for their stripes to find.
  absl::Mutex links_mu_;
  absl::flat_hash_map<uint64_t, std::weak_ptr<Connection>> links_
      ABSL_GUARDED_BY(links_mu_);
};

// A task's DataListener, made when it is first needed: when the first push or
// RunGraph call arrives over gRPC. A listener takes a free port of the system's
// ephemeral range; made while the other tasks of a cluster start, it could
// take the port that one of them was given (tests and `distflow local` give
// tasks free ports of that range), which that task would then find in use.
// Thread-safe.
class LazyDataListener {
 public:
  LazyDataListener(std::string host, std::shared_ptr<RecvBufferPool> pool,
                   DataListener::Handlers handlers, std::string task)
      : host_(std::move(host)),
        pool_(std::move(pool)),
        handlers_(std::move(handlers)),
        task_(std::move(task)) {}

  // The listener, made on the first call; null once closed, or when it
  // cannot listen (logged; calls then come over gRPC only, and it is tried
  // again a minute later). It stays alive as long as this object.
  DataListener* Get();
  // Closes the listener, if made, and makes Get return null from now on.
  void Close();
  // The listener's port, the tensors it received, the RunGraph calls it
  // took, its readings handed on and its striped pushes (0 before it is
  // made).
  int port();
  int64_t received();
  int64_t run_graphs();
  int64_t handoffs();
  int64_t striped();

 private:
  const std::string host_;
  const std::shared_ptr<RecvBufferPool> pool_;
  const DataListener::Handlers handlers_;
  const std::string task_;
  absl::Mutex mu_;
  std::unique_ptr<DataListener> listener_ ABSL_GUARDED_BY(mu_);
  // When making it last failed.
  std::optional<SteadyTime> failed_at_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_DATA_LISTENER_H_
