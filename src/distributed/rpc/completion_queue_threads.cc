#include "distributed/rpc/completion_queue_threads.h"

#include <pthread.h>

#include <utility>

namespace distflow {

bool CqTag::Track() { return threads_->Track(this); }

void CqTag::Release() {
  threads_->Untrack(this);
  delete this;
}

CompletionQueueThreads::CompletionQueueThreads(std::string name,
                                               grpc::CompletionQueue* cq,
                                               int num_threads)
    : name_(std::move(name)),
      owned_cq_(cq == nullptr ? std::make_unique<grpc::CompletionQueue>()
                              : nullptr),
      cq_(cq == nullptr ? owned_cq_.get() : cq) {
  for (int i = 0; i < num_threads; ++i) {
    threads_.emplace_back([this] { Poll(); });
  }
}

CompletionQueueThreads::~CompletionQueueThreads() { Shutdown(); }

bool CompletionQueueThreads::closing() const {
  absl::MutexLock lock(&mu_);
  return closing_;
}

bool CompletionQueueThreads::Track(CqTag* tag) {
  absl::MutexLock lock(&mu_);
  live_.insert(tag);
  if (closing_) tag->Cancel();
  return !closing_;
}

void CompletionQueueThreads::Untrack(CqTag* tag) {
  absl::MutexLock lock(&mu_);
  live_.erase(tag);
}

void CompletionQueueThreads::Close() {
  absl::MutexLock lock(&mu_);
  if (closing_) return;
  closing_ = true;
  // Under the lock: a tag cannot release itself while it is being cancelled.
  for (CqTag* tag : live_) tag->Cancel();
}

void CompletionQueueThreads::Shutdown() {
  Close();
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return live_.empty();
    };
    mu_.Await(absl::Condition(&drained));
    shut_down_ = true;
  }
  cq_->Shutdown();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
}

void CompletionQueueThreads::Poll() {
  // Named for profiles (the kernel keeps 15 characters).
  pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
  void* tag = nullptr;
  bool ok = false;
  while (cq_->Next(&tag, &ok)) static_cast<CqTag*>(tag)->OnEvent(ok);
}

}  // namespace distflow
