#include "runtime/rendezvous.h"

#include <utility>
#include <vector>

namespace distflow {

LocalRendezvous::~LocalRendezvous() {
  StartAbort(absl::CancelledError("rendezvous destroyed"));
}

void LocalRendezvous::SendAsync(const std::string& key, Tensor value,
                                SendCallback done) {
  Send(key, std::move(value), std::move(done), /*done_first=*/false);
}

void LocalRendezvous::SendAsyncAnswerFirst(const std::string& key, Tensor value,
                                           SendCallback done) {
  Send(key, std::move(value), std::move(done), /*done_first=*/true);
}

void LocalRendezvous::Send(const std::string& key, Tensor value,
                           SendCallback done, bool done_first) {
  RecvCallback waiter;
  absl::Status error;
  {
    absl::MutexLock lock(&mu_);
    if (!abort_status_.ok()) {
      error = abort_status_;
    } else {
      Item& item = table_[key];
      if (item.has_value) {
        error = absl::InternalError(
            absl::StrCat("rendezvous key '", key, "' was sent twice"));
      } else if (item.waiter) {
        waiter = std::move(item.waiter);
        table_.erase(key);
      } else {
        item.has_value = true;
        item.value = std::move(value);
      }
    }
  }
  // Callbacks run outside the lock: they may start more of the step.
  if (done_first) done(error);
  if (waiter) waiter(absl::OkStatus(), std::move(value));
  if (!done_first) done(error);
}

void LocalRendezvous::RecvAsync(const std::string& key, RecvCallback done) {
  Tensor value;
  absl::Status error;
  {
    absl::MutexLock lock(&mu_);
    if (!abort_status_.ok()) {
      error = abort_status_;
    } else {
      auto it = table_.find(key);
      if (it == table_.end()) {
        table_[key].waiter = std::move(done);
        return;
      }
      if (!it->second.has_value) {
        error = absl::InternalError(
            absl::StrCat("rendezvous key '", key, "' was received twice"));
      } else {
        value = std::move(it->second.value);
        table_.erase(it);
      }
    }
  }
  done(error, std::move(value));
}

void LocalRendezvous::StartAbort(const absl::Status& status) {
  std::vector<RecvCallback> waiters;
  absl::Status abort_status =
      status.ok() ? absl::CancelledError("step aborted") : status;
  {
    absl::MutexLock lock(&mu_);
    if (!abort_status_.ok()) return;
    abort_status_ = abort_status;
    for (auto& [key, item] : table_) {
      if (item.waiter) waiters.push_back(std::move(item.waiter));
    }
    table_.clear();
  }
  for (auto& waiter : waiters) waiter(abort_status, Tensor());
}

absl::Status LocalRendezvous::status() const {
  absl::MutexLock lock(&mu_);
  return abort_status_;
}

}  // namespace distflow
