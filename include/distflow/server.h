// The server of one task of a cluster: a gRPC server on the task's address
// that hosts the task's master (sessions with target "grpc://host:port" run
// their graphs through it) and its worker (which runs the parts of every
// session's graph placed on this task).
//
//   auto server = distflow::Server::Create(cluster, "ps", 0).value();
//   return server->Join().ok() ? 0 : 1;   // until the job tells it to stop
#ifndef DISTFLOW_SERVER_H_
#define DISTFLOW_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distflow/cluster.h"

namespace distflow {

struct ServerOptions {
  // Threads that run independent ops of a step (0: one per core).
  int inter_op_threads = 0;
  // Threads one op may use (0: one per core).
  int intra_op_threads = 0;
  // How the task's threads wait when they run out of work. Polling for a
  // while before they sleep (as a local session's threads do) starts work
  // that comes soon after without a wake-up; sleeping at once leaves the
  // cores to other processes. A task's work mostly comes after network waits
  // (other tasks' tensors, the next step's call), which polling rarely
  // bridges, and a polling thread takes a core from the tasks it shares the
  // machine with: on two cores shared by a ps and a worker, a worker with two
  // sleeping threads trained 7-22% faster than one with a polling thread, and
  // two polling threads were no faster than one (docs/benchmarks.md,
  // "Threads that sleep when idle").
  // kAuto sleeps when another task of the cluster has this task's host, and
  // polls otherwise.
  enum class IdleThreads { kAuto, kPoll, kSleep };
  IdleThreads idle_threads = IdleThreads::kAuto;
  // Deadline of control calls to other tasks (register, abort, ...).
  int64_t rpc_timeout_ms = 30'000;
  // Deadline of one step on one task, and of one tensor transfer.
  int64_t step_timeout_ms = 3'600'000;
  // Large tensors between two tasks on this machine skip TCP: the receiver
  // maps the sender's memory and computes on the tensor where it lies (the
  // server keeps large tensors in memory other processes can map; the
  // environment variable DISTFLOW_SHARED_TENSORS=0 keeps them on the heap),
  // or copies it straight out of the sender (process_vm_readv). Where the
  // processes may not read each other (another host or pid namespace, a
  // restrictive ptrace policy) the pair falls back to TCP by itself. The
  // environment variable DISTFLOW_SAME_HOST_TRANSPORT=0 also turns it off.
  bool same_host_transport = true;
  // The server also listens on an abstract Unix domain socket named after its
  // address, and reaches other tasks of this machine on theirs: calls skip
  // the loopback TCP stack (less CPU and latency per message). A task that
  // does not find the socket (another host or network namespace, or a task
  // with this off) is reached over TCP. The environment variable
  // DISTFLOW_LOCAL_SOCKET=0 also turns it off.
  bool local_socket = true;
  // A "grpc://" session whose master is in another process tells that
  // master every third of this that its client is alive (a small call, made
  // whether or not a step runs). The master closes a session whose client
  // has been silent this long with none of its steps running (the client's
  // process died, was stopped, or lost the network), and with it the graphs
  // the session registered on every task; the client's next call is ABORTED,
  // saying so. 0 keeps every session until its client closes it. Sessions
  // that call the master in its own process never expire.
  int64_t remote_session_timeout_ms = 60'000;
  // Tensors of 256 KiB or more that cross TCP (between hosts, or with the
  // same-host path off) go on a plain TCP connection per pair of tasks,
  // beside gRPC, written from and read into the tensors' own buffers: gRPC
  // would copy every byte once more and frame it. The server listens for
  // these connections on a free port of its host and tells senders about it
  // over gRPC; a sender that cannot reach that port (a firewall that lets
  // only the task's port through) keeps pushing over gRPC. The environment
  // variable DISTFLOW_DATA_CONNECTION=0 also turns it off.
  bool data_connection = true;
  // TCP connections per data connection (1 to 8): tensors of 1 MiB or more
  // are split across them, each part written and read by a thread of its
  // own, which lets a transfer use more than one core on each end (on a
  // 2-core machine, two streams moved 4 MiB messages 1.5-3 times as fast as
  // one). The task that sends decides: a task takes the extra sockets that
  // its callers open whatever its own setting. The environment variable
  // DISTFLOW_DATA_SOCKETS overrides it.
  int data_sockets = 2;
  // Tensors pushed here by other tasks that no step has taken yet (those of
  // a step whose RunGraph has not come here, and those still arriving in
  // chunks) are dropped after this long (at most the step deadline and its
  // slack), and may hold this many bytes per peer connection and in all: a
  // push past either is refused with RESOURCE_EXHAUSTED naming the peer. A
  // peer that never finishes or never runs its step thus holds a bounded
  // amount for a bounded time. 0 bytes: no limit.
  int64_t pending_push_timeout_ms = 300'000;
  int64_t max_pending_push_bytes_per_peer = int64_t{4} << 30;
  int64_t max_pending_push_bytes = int64_t{16} << 30;
  // The largest gRPC message the task takes; a larger one is refused with
  // RESOURCE_EXHAUSTED. Pushed tensors and a session's feeds and fetches
  // travel in 4 MiB pieces whatever their size; a graph (with its constants)
  // and the feeds of one partition travel as one message each. At least
  // 8 MiB (the pieces must fit).
  int64_t max_message_bytes = int64_t{256} << 20;
};

// Thread-safe.
class Server {
 public:
  // Starts the server of task `task_index` of job `job_name`, listening on
  // its address in `cluster`. A port of 0 picks a free port (see target()).
  // INVALID_ARGUMENT naming the job and index if the cluster lacks the task;
  // UNAVAILABLE naming the address if it cannot be listened on (the port is
  // in use, or the host is not this machine's).
  static absl::StatusOr<std::unique_ptr<Server>> Create(
      const ClusterSpec& cluster, const std::string& job_name, int task_index,
      const ServerOptions& options = {});

  // Stops the server (see Stop).
  virtual ~Server() = default;

  // "grpc://host:port", with the port actually bound.
  virtual std::string target() const = 0;
  virtual int port() const = 0;

  // Blocks until the server stops: Stop() was called, or another task asked
  // it to stop (ShutdownTask). Returns OK after a clean stop.
  virtual absl::Status Join() = 0;
  // Aborts running steps (their callers get CANCELLED), stops serving, and
  // wakes Join. Idempotent.
  virtual absl::Status Stop() = 0;
};

// Asks the server of the task at `address` ("host:port") to stop: its Join()
// returns, so a ps task's process exits when the job is done. UNAVAILABLE
// naming the address if the task cannot be reached within `timeout_ms`.
absl::Status ShutdownTask(const std::string& address,
                          const std::string& reason = "the job is done",
                          int64_t timeout_ms = 10'000);

// Tells the task at `address` that the job is done, without cutting short
// the workers' last steps: from now on it refuses new steps with OUT_OF_RANGE
// (which a MonitoredTrainingSession takes as the end of training), and its
// Join() returns OK once no step has run on it for `idle_grace_ms`.
// UNAVAILABLE naming the address if the task cannot be reached within
// `timeout_ms`; INVALID_ARGUMENT if idle_grace_ms is not positive.
absl::Status EndJobOnTask(const std::string& address,
                          int64_t idle_grace_ms = 2'000,
                          int64_t timeout_ms = 10'000);

// EndJobOnTask for every ps task of `cluster`; the first error, after trying
// all of them. What a chief calls when training is over (see
// MonitoredTrainingSession::Options::on_training_end).
absl::Status EndJob(const ClusterSpec& cluster, int64_t idle_grace_ms = 2'000,
                    int64_t timeout_ms = 10'000);

}  // namespace distflow

#endif  // DISTFLOW_SERVER_H_
