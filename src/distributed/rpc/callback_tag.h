// One operation's tag on a completion queue polled by distflow's threads
// (completion_queue_threads.h) that runs a function when the operation
// completes. For calls made of several operations (a stream's start, reads,
// writes and finish), where each operation needs a tag of its own.
#ifndef DISTFLOW_DISTRIBUTED_RPC_CALLBACK_TAG_H_
#define DISTFLOW_DISTRIBUTED_RPC_CALLBACK_TAG_H_

#include <functional>
#include <memory>
#include <utility>

#include "distributed/rpc/completion_queue_threads.h"

namespace distflow {

class CallbackTag : public CqTag {
 public:
  // A tag that calls `on_event(ok)` on a polling thread when its operation
  // completes, then deletes itself; `on_cancel` (may be empty) is called if
  // the queue closes first, under the queue's lock (it must not block), to
  // make the operation end soon. Null if the queue is closing: then start no
  // operation.
  static CallbackTag* New(CompletionQueueThreads* threads,
                          std::function<void(bool ok)> on_event,
                          std::function<void()> on_cancel = {}) {
    auto* tag =
        new CallbackTag(threads, std::move(on_event), std::move(on_cancel));
    if (!tag->Track()) {
      tag->Release();
      return nullptr;
    }
    return tag;
  }
  // The same, but never null: for an operation that ends at once on a call
  // that was cancelled (a stream's Finish), which the closing queue then
  // waits for like any other.
  static CallbackTag* NewForEnding(CompletionQueueThreads* threads,
                                   std::function<void(bool ok)> on_event) {
    auto* tag = new CallbackTag(threads, std::move(on_event), {});
    (void)tag->Track();
    return tag;
  }

  void OnEvent(bool ok) override {
    on_event_(ok);
    Release();
  }
  void Cancel() override {
    if (on_cancel_) on_cancel_();
  }

 private:
  CallbackTag(CompletionQueueThreads* threads,
              std::function<void(bool ok)> on_event,
              std::function<void()> on_cancel)
      : CqTag(threads),
        on_event_(std::move(on_event)),
        on_cancel_(std::move(on_cancel)) {}

  std::function<void(bool ok)> on_event_;
  std::function<void()> on_cancel_;
};

// The tag of a server call's AsyncNotifyWhenDone event, which needs one of
// its own: calls `call->OnEnded()` when the call has ended (answered,
// cancelled or past its deadline). A member of the call, never tracked or
// released itself: the call stays tracked until this event is in.
template <typename Call>
class CallEndTag : public CqTag {
 public:
  CallEndTag(Call* call, CompletionQueueThreads* threads)
      : CqTag(threads), call_(call) {}
  void OnEvent(bool /*ok*/) override { call_->OnEnded(); }

 private:
  Call* const call_;
};

// Keeps a closing queue from shutting down while a call may still start an
// operation (a handler that has not answered yet, whose answer then goes out
// on the call), as a tracked tag does; it waits on no operation itself.
class QueueHold : public CqTag {
 public:
  static QueueHold* New(CompletionQueueThreads* threads) {
    auto* hold = new QueueHold(threads);
    (void)hold->Track();  // counted even while the queue closes
    return hold;
  }
  // Lets the queue shut down (as far as this hold goes) and deletes it.
  void Drop() { Release(); }
  void OnEvent(bool /*ok*/) override {}

 private:
  explicit QueueHold(CompletionQueueThreads* threads) : CqTag(threads) {}
};

// A tag for one operation of a call held by `call` (which the tag keeps
// alive): runs `(*call).*on_event(ok)`, and cancels `ctx` (the call's
// context) if the queue closes first. Null if the queue is closing.
template <typename Call, typename Context>
CallbackTag* NewCallTag(CompletionQueueThreads* threads,
                        std::shared_ptr<Call> call,
                        void (Call::*on_event)(bool ok), Context* ctx) {
  return CallbackTag::New(
      threads,
      [call = std::move(call), on_event](bool ok) { ((*call).*on_event)(ok); },
      [ctx] { ctx->TryCancel(); });
}

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_CALLBACK_TAG_H_
