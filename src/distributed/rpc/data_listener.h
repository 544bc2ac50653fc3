// The receiving end of data connections (data_socket.h): a task listens on a
// TCP port of its own beside gRPC, and reads each pushed tensor's bytes
// straight from the socket into the tensor's (pooled) buffer.
//
// One thread accepts connections, and one per connection reads its pushes
// in order and hands each finished tensor to `deliver`, whose callback
// writes the answer (from any thread). A connection whose hello does not
// carry this listener's token is refused; a push whose header does not
// describe a tensor gets INVALID_ARGUMENT naming the tensor and ends the
// connection (its framing can no longer be trusted); a tensor that cannot be
// allocated gets RESOURCE_EXHAUSTED, and the connection goes on. An answer
// that the sender leaves unread for 30 s ends the connection; at most 512
// connections are served at once.
#ifndef DISTFLOW_DISTRIBUTED_RPC_DATA_LISTENER_H_
#define DISTFLOW_DISTRIBUTED_RPC_DATA_LISTENER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "distflow/tensor.h"
#include "distributed/rpc/recv_buffer_pool.h"
#include "distributed/worker_interface.h"

namespace distflow {

class DataListener {
 public:
  using Deliver = std::function<void(int64_t step_id, const std::string& key,
                                     const Tensor& value, StatusCallback done)>;

  // Listens on a free port of `host` (a numeric address or a name; "0.0.0.0"
  // for every interface). Tensors are allocated from `pool` (may be null).
  // UNAVAILABLE naming the host when it cannot listen.
  static absl::StatusOr<std::unique_ptr<DataListener>> Create(
      const std::string& host, std::shared_ptr<RecvBufferPool> pool,
      Deliver deliver);
  // Close().
  ~DataListener();
  DataListener(const DataListener&) = delete;
  DataListener& operator=(const DataListener&) = delete;

  int port() const { return port_; }
  uint64_t token() const { return token_; }
  // Tensors received so far (for tests).
  int64_t received() const { return received_.load(); }

  // Stops accepting, ends every connection (their senders see them break)
  // and waits for the threads. Answers of pushes still being delivered are
  // dropped. Idempotent.
  void Close();

 private:
  struct Connection;
  DataListener(int fd, int port, std::shared_ptr<RecvBufferPool> pool,
               Deliver deliver);
  void AcceptLoop();
  void Serve(const std::shared_ptr<Connection>& connection);
  // Reads one push and hands it over; false when the connection is done.
  bool ServeOne(const std::shared_ptr<Connection>& connection);
  // A receive buffer; RESOURCE_EXHAUSTED when there is no memory for it.
  absl::StatusOr<Tensor> Allocate(DataType dtype, const TensorShape& shape,
                                  int64_t bytes);

  const int fd_;
  const int port_;
  const uint64_t token_;
  const std::shared_ptr<RecvBufferPool> pool_;
  const Deliver deliver_;
  std::thread acceptor_;
  std::atomic<int64_t> received_{0};
  absl::Mutex mu_;
  // Whether accept() is failing (it is logged once per episode).
  bool accept_failing_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  struct Served {
    std::shared_ptr<Connection> connection;
    std::thread thread;
  };
  std::vector<Served> served_ ABSL_GUARDED_BY(mu_);
};

// A task's DataListener, made when it is first needed: when the first large
// push arrives over gRPC. A listener takes a free port of the system's
// ephemeral range; made while the other tasks of a cluster start, it could
// take the port that one of them was given (tests and `distflow local` give
// tasks free ports of that range), which that task would then find in use.
// Thread-safe.
class LazyDataListener {
 public:
  LazyDataListener(std::string host, std::shared_ptr<RecvBufferPool> pool,
                   DataListener::Deliver deliver, std::string task)
      : host_(std::move(host)),
        pool_(std::move(pool)),
        deliver_(std::move(deliver)),
        task_(std::move(task)) {}

  // The listener, made on the first call; null once closed, or when it
  // cannot listen (logged; tensors then come over gRPC only, and it is tried
  // again a minute later). It stays alive as long as this object.
  DataListener* Get();
  // Closes the listener, if made, and makes Get return null from now on.
  void Close();
  // The listener's port, and the tensors it received (0 before it is made).
  int port();
  int64_t received();

 private:
  const std::string host_;
  const std::shared_ptr<RecvBufferPool> pool_;
  const DataListener::Deliver deliver_;
  const std::string task_;
  absl::Mutex mu_;
  std::unique_ptr<DataListener> listener_ ABSL_GUARDED_BY(mu_);
  // When making it last failed.
  absl::Time failed_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_DATA_LISTENER_H_
