#include "base/cancellation.h"

#include <utility>

namespace distflow {

void CancellationManager::StartCancel() {
  absl::flat_hash_map<Token, std::function<void()>> callbacks;
  {
    absl::MutexLock lock(&mu_);
    if (cancelling_) return;
    cancelling_ = true;
    callbacks.swap(callbacks_);
  }
  cancelled_.Notify();
  for (auto& [token, callback] : callbacks) callback();
  callbacks_done_.Notify();
}

bool CancellationManager::RegisterCallback(std::function<void()> callback,
                                           Token* token) {
  absl::MutexLock lock(&mu_);
  if (cancelling_) return false;
  *token = next_token_++;
  callbacks_.emplace(*token, std::move(callback));
  return true;
}

bool CancellationManager::DeregisterCallback(Token token) {
  {
    absl::MutexLock lock(&mu_);
    if (!cancelling_) {
      callbacks_.erase(token);
      return true;
    }
  }
  callbacks_done_.WaitForNotification();
  return false;
}

}  // namespace distflow
