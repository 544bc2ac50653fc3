// Threads of distflow's own that poll one gRPC completion queue and run each
// event's handler on the polling thread itself. gRPC's callback API hands
// every completion from the thread that read it to another (two hand-overs
// per call on each side); here the thread that polls the connection reads
// the message and runs the handler, so a small call crosses no thread.
#ifndef DISTFLOW_DISTRIBUTED_RPC_COMPLETION_QUEUE_THREADS_H_
#define DISTFLOW_DISTRIBUTED_RPC_COMPLETION_QUEUE_THREADS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"

namespace distflow {

class CompletionQueueThreads;

// A call (one or more operations) waiting on the queue; its address is its
// operations' tag. Made with new; Track it before its first operation, and
// end it with Release in its last OnEvent. The queue is shut down only once
// every tracked tag is released, so a tag may start operations until then.
class CqTag {
 public:
  explicit CqTag(CompletionQueueThreads* threads) : threads_(threads) {}
  virtual ~CqTag() = default;
  CqTag(const CqTag&) = delete;
  CqTag& operator=(const CqTag&) = delete;

  // One of this tag's operations completed (`ok` as gRPC reports it).
  virtual void OnEvent(bool ok) = 0;
  // The queue is closing: end the call soon (a client call cancels itself).
  // Called under the queue's lock: must not block or start operations.
  virtual void Cancel() {}

 protected:
  CompletionQueueThreads* threads() const { return threads_; }
  // Counts this tag as live. Returns false if the queue is closing: then
  // start no operation and Release the tag.
  bool Track();
  // Stops counting this tag and deletes it.
  void Release();

 private:
  CompletionQueueThreads* const threads_;
};

class CompletionQueueThreads {
 public:
  // Polls `cq` (not owned; a server's queue, or null for a queue of its own,
  // for client calls only) on `num_threads` threads named `name`, and keeps
  // one more thread on standby: it polls only while every polling thread has
  // been running one handler for longer than a few milliseconds (a long
  // same-host read, a checkpoint saved by a small partition), so that the
  // task keeps answering calls and keepalive pings meanwhile. Fewer threads
  // in the queue answer faster: a reply read by one thread while another
  // waits for it costs a wake-up. While events come close together, a
  // polling thread keeps polling after each one, without sleeping, for
  // PollerSpin() (completion_queue_spin.h).
  CompletionQueueThreads(std::string name, grpc::CompletionQueue* cq,
                         int num_threads);
  // Calls Shutdown.
  ~CompletionQueueThreads();

  grpc::CompletionQueue* cq() const { return cq_; }

  // Whether Close has been called: a tag tracked from then on is refused.
  bool closing() const;

  // Cancels every live tag (client calls end soon with CANCELLED) and refuses
  // new ones; the threads keep delivering events.
  void Close();

  // Closes, waits until every tag is gone, then shuts the queue down and
  // joins the threads. A server's queue may be shut down only after its
  // server: call Server::Shutdown first.
  void Shutdown();

 private:
  friend class CqTag;
  bool Track(CqTag* tag);
  void Untrack(CqTag* tag);
  void Poll();
  void Standby();

  const std::string name_;
  std::unique_ptr<grpc::CompletionQueue> owned_cq_;
  grpc::CompletionQueue* const cq_;
  const int num_threads_;
  // How long a polling thread polls on after an event before it blocks.
  const absl::Duration spin_;
  std::vector<std::thread> threads_;
  // How many polling threads run a handler, and since when all of them do
  // (nanoseconds since the epoch; 0 while one is free).
  std::atomic<int> busy_{0};
  std::atomic<int64_t> all_busy_since_ns_{0};
  absl::Notification stop_standby_;
  mutable absl::Mutex mu_;
  absl::flat_hash_set<CqTag*> live_ ABSL_GUARDED_BY(mu_);
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_COMPLETION_QUEUE_THREADS_H_
