// How many bytes of pushed tensors a task holds for others before any step
// of its own needs them: tensors still arriving in chunks, and whole tensors
// pushed for a step whose RunGraph has not come yet. Each peer (a connection
// as gRPC names it) may hold `per_peer` bytes and all peers together
// `per_task`; a push past either is refused with RESOURCE_EXHAUSTED naming the
// peer, so one peer, hostile or broken, cannot fill the task's memory.
#ifndef DISTFLOW_DISTRIBUTED_PUSH_BUDGET_H_
#define DISTFLOW_DISTRIBUTED_PUSH_BUDGET_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace distflow {

// Thread-safe.
class PushBudget {
 public:
  // Defaults of ServerOptions::max_pending_push_bytes{_per_peer}.
  static constexpr int64_t kDefaultPerPeer = int64_t{4} << 30;
  static constexpr int64_t kDefaultPerTask = int64_t{16} << 30;

  // A limit of 0 or less means none.
  PushBudget(int64_t per_peer = kDefaultPerPeer,
             int64_t per_task = kDefaultPerTask)
      : per_peer_(per_peer), per_task_(per_task) {}

  // Counts `bytes` more against `peer`; RESOURCE_EXHAUSTED naming the peer,
  // `what` it pushed and what it and the task hold if a limit would be passed
  // (nothing is counted then).
  absl::Status Reserve(const std::string& peer, int64_t bytes,
                       absl::string_view what);
  // Gives back `bytes` counted against `peer` by Reserve.
  void Release(const std::string& peer, int64_t bytes);

  int64_t HeldBy(const std::string& peer) const;
  int64_t Held() const;

 private:
  const int64_t per_peer_;
  const int64_t per_task_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, int64_t> held_ ABSL_GUARDED_BY(mu_);
  int64_t total_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_PUSH_BUDGET_H_
