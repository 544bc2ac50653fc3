// An in-process rendezvous: a table of keys, each holding a sent value or a
// waiting receiver.
#ifndef DISTFLOW_RUNTIME_RENDEZVOUS_H_
#define DISTFLOW_RUNTIME_RENDEZVOUS_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "kernels/rendezvous.h"

namespace distflow {

// SendAsync completes at once (the value waits in the table for its
// receiver). A key sent twice is an error for the second sender. Callbacks
// run outside the lock, on the thread that completes the pair.
class LocalRendezvous : public Rendezvous {
 public:
  LocalRendezvous() = default;
  ~LocalRendezvous() override;

  void SendAsync(const std::string& key, Tensor value,
                 SendCallback done) override;
  // As SendAsync, but `done` runs before a waiting receiver's callback
  // rather than after it (the callback may run much of a step on this
  // thread).
  void SendAsyncAnswerFirst(const std::string& key, Tensor value,
                            SendCallback done);
  void RecvAsync(const std::string& key, RecvCallback done) override;
  void StartAbort(const absl::Status& status) override;

  // The abort status, OK if not aborted.
  absl::Status status() const;

 private:
  struct Item {
    bool has_value = false;
    Tensor value;
    RecvCallback waiter;
  };
  void Send(const std::string& key, Tensor value, SendCallback done,
            bool done_first);

  mutable absl::Mutex mu_;
  absl::Status abort_status_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Item> table_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distflow

#endif  // DISTFLOW_RUNTIME_RENDEZVOUS_H_
