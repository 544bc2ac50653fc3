#include "distributed/push_budget.h"

#include "absl/strings/str_cat.h"

namespace distflow {

absl::Status PushBudget::Reserve(const std::string& peer, int64_t bytes,
                                 absl::string_view what) {
  if (bytes <= 0) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  int64_t& held = held_[peer];
  const bool peer_over = per_peer_ > 0 && bytes > per_peer_ - held;
  const bool task_over = per_task_ > 0 && bytes > per_task_ - total_;
  if (peer_over || task_over) {
    const int64_t peer_held = held;
    if (held == 0) held_.erase(peer);
    return absl::ResourceExhaustedError(absl::StrCat(
        "peer ", peer, " pushed ", what, " (", bytes, " bytes) while ",
        peer_over ? absl::StrCat("it already holds ", peer_held, " of its ",
                                 per_peer_, " bytes")
                  : absl::StrCat("this task already holds ", total_, " of its ",
                                 per_task_, " bytes"),
        " of tensors not yet taken by a step (ServerOptions::"
        "max_pending_push_bytes",
        peer_over ? "_per_peer" : "", " is the limit)"));
  }
  held += bytes;
  total_ += bytes;
  return absl::OkStatus();
}

void PushBudget::Release(const std::string& peer, int64_t bytes) {
  if (bytes <= 0) return;
  absl::MutexLock lock(&mu_);
  auto it = held_.find(peer);
  if (it == held_.end()) return;
  it->second -= bytes;
  total_ -= bytes;
  if (it->second <= 0) held_.erase(it);
}

int64_t PushBudget::HeldBy(const std::string& peer) const {
  absl::MutexLock lock(&mu_);
  auto it = held_.find(peer);
  return it == held_.end() ? 0 : it->second;
}

int64_t PushBudget::Held() const {
  absl::MutexLock lock(&mu_);
  return total_;
}

}  // namespace distflow
