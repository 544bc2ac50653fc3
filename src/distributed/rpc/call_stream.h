// Calls from one task to another as messages on one gRPC stream that stays
// open between steps: RunGraph (run_graph_stream.h) and PushTensor
// (push_stream.h).
//
// A unary call opens an HTTP/2 stream of its own: headers out and back,
// trailers, and gRPC's setup of a call on both sides. For a small message
// that is most of the cost: an echo between two processes of one 2-core
// host took 65-73 us a unary call against 35-37 us a message each way on an
// open stream (docs/benchmarks.md, "RunGraph on a stream"). A training step
// sends a few such calls to each task it uses, every step, so they go on one
// stream per task and kind of call. Each call carries an id (non-zero,
// unique among the stream's running calls) that its answer carries back;
// calls may overlap, and answers come as they are ready.
//
// Failures keep the unary call's meaning: a stream that breaks (the task
// died, or its connection did) fails every call still waiting with the
// transport's status, naming the task and its address; a call past its
// deadline fails alone with DEADLINE_EXCEEDED (and, for calls that run a
// step, tells the task, which aborts the step); on the serving side, a
// stream that breaks with calls still running cancels them, as for a
// cancelled unary call.
//
// `Calls` describes one kind of call and its messages:
//
//   using Request, Response;     // one call's request and answer
//   using CallMessage;           // what the caller writes on the stream
//   using AnswerMessage;         // what the task writes back
//   static constexpr char kMethod[];  // names the call in errors
//   // The caller's side:
//   static CallMessage Call(uint64_t id, const Request&);
//   static std::optional<CallMessage> Cancel(uint64_t id);  // or nullopt
//   static bool ParseAnswer(AnswerMessage*, StreamAnswer<Response>*);
//   // The task's side:
//   static bool ParseCall(CallMessage*, StreamCall<Request>*);
//   static AnswerMessage Answer(uint64_t id, const absl::Status&, Response*);
//
// The Parse functions may take the message's contents; false means it is
// malformed.
#ifndef DISTFLOW_DISTRIBUTED_RPC_CALL_STREAM_H_
#define DISTFLOW_DISTRIBUTED_RPC_CALL_STREAM_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "distributed/rpc/callback_tag.h"
#include "distributed/rpc/completion_queue_threads.h"
#include "distributed/rpc/grpc_util.h"
#include "grpcpp/alarm.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/async_stream.h"

namespace distflow {

// An answer as the caller reads it.
template <typename Response>
struct StreamAnswer {
  uint64_t id = 0;
  grpc::Status status;
  Response response;
};

// A call as the task reads it: a request, or a cancel of call `id`.
template <typename Request>
struct StreamCall {
  uint64_t id = 0;
  bool cancel = false;
  Request request;
};

// The calling side: one stream to one task, on `threads`' queue.
template <typename Calls>
class CallStreamClient
    : public std::enable_shared_from_this<CallStreamClient<Calls>> {
 public:
  using Request = typename Calls::Request;
  using Response = typename Calls::Response;
  using CallMessage = typename Calls::CallMessage;
  using AnswerMessage = typename Calls::AnswerMessage;
  using Stream =
      grpc::ClientAsyncReaderWriterInterface<CallMessage, AnswerMessage>;
  // Prepares the stream's call on a context and queue (the stub's
  // PrepareAsync... method).
  using Prepare = std::function<std::unique_ptr<Stream>(
      grpc::ClientContext*, grpc::CompletionQueue*)>;
  using Done = std::function<void(const absl::Status&)>;

  // A stream opened by its first call; `prepare`'s stub outlives it.
  static std::shared_ptr<CallStreamClient> Open(Prepare prepare,
                                                CompletionQueueThreads* threads,
                                                std::string task,
                                                std::string address) {
    return std::make_shared<CallStreamClient>(
        std::move(prepare), threads, std::move(task), std::move(address));
  }

  CallStreamClient(Prepare prepare, CompletionQueueThreads* threads,
                   std::string task, std::string address)
      : prepare_(std::move(prepare)),
        threads_(threads),
        task_(std::move(task)),
        address_(std::move(address)) {}

  // Sends `request`. `done` gets the call's status, with the answer in
  // `*response`, on a polling thread. Returns false, without calling `done`,
  // if the stream has failed (open another) or this task's RPC layer is
  // shutting down; the first call of a stream is always taken otherwise.
  // `keepalive` (may be null) is held until the task has answered or the
  // stream is over, even past the call's deadline: what the task may still
  // read while it handles the call (a same-host push's tensor).
  bool Call(const Request& request, Response* response, absl::Duration timeout,
            Done done, std::shared_ptr<const void> keepalive = nullptr) {
    absl::MutexLock lock(&mu_);
    if (failed_) return false;
    // The stream starts with its first call, which it therefore always takes.
    if (stream_ == nullptr && !Start()) return false;
    const uint64_t id = next_id_++;
    const SteadyTime deadline = SteadyAfter(SteadyNow(), timeout);
    to_write_.push_back(Calls::Call(id, request));
    pending_.emplace(
        id, Pending{response, std::move(done), deadline, std::move(keepalive)});
    if (!alarm_armed_) {
      ArmAlarm(deadline);
    } else if (deadline < alarm_at_) {
      alarm_.Cancel();  // OnAlarm arms it again for the earliest deadline
    }
    // Before the stream has started, OnStarted sends what is queued.
    if (started_ && !writing_ && !StartWrite()) Fail();
    return true;
  }

  // Whether the stream is over: it has finished and every `done` returned.
  bool Over() const { return over_.HasBeenNotified(); }
  // Whether the task does not serve this stream (an older version: gRPC
  // ended it with UNIMPLEMENTED). Set before the waiting calls' `done` run.
  bool Unimplemented() const {
    return unimplemented_.load(std::memory_order_acquire);
  }

  // Ends the stream: calls still waiting fail with CANCELLED. Returns once
  // the stream is over and every `done` has returned.
  void Close() {
    {
      absl::MutexLock lock(&mu_);
      if (stream_ == nullptr) {  // never started: nothing to wait for
        failed_ = true;
        return;
      }
      Fail();
      MaybeFinish();
    }
    over_.WaitForNotification();
  }

 private:
  struct Pending {
    Response* response;
    Done done;
    SteadyTime deadline;
    std::shared_ptr<const void> keepalive;
  };

  // Starts the stream; false if this task's RPC layer is shutting down.
  bool Start() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    CallbackTag* tag = NewCallTag(threads_, this->shared_from_this(),
                                  &CallStreamClient::OnStarted, &ctx_);
    if (tag == nullptr) {
      failed_ = true;
      over_.Notify();
      return false;
    }
    stream_ = prepare_(&ctx_, threads_->cq());
    stream_->StartCall(tag);
    return true;
  }

  void OnStarted(bool ok) {
    absl::MutexLock lock(&mu_);
    started_ = true;
    // A stream that failed to start fails its first read too, and then
    // finishes with the reason.
    if (!StartRead()) Fail();
    if (ok && !failed_ && !to_write_.empty() && !StartWrite()) Fail();
    MaybeFinish();
  }

  // Each starts one operation, under mu_; false if the queue is closing.
  bool StartRead() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    CallbackTag* tag = NewCallTag(threads_, this->shared_from_this(),
                                  &CallStreamClient::OnRead, &ctx_);
    if (tag == nullptr) return false;
    reading_ = true;
    stream_->Read(&incoming_, tag);
    return true;
  }
  bool StartWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    CallbackTag* tag = NewCallTag(threads_, this->shared_from_this(),
                                  &CallStreamClient::OnWritten, &ctx_);
    if (tag == nullptr) return false;
    writing_ = true;
    stream_->Write(to_write_.front(), tag);
    return true;
  }

  void ArmAlarm(SteadyTime at) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto self = this->shared_from_this();
    CallbackTag* tag =
        CallbackTag::New(threads_, [self](bool ok) { self->OnAlarm(ok); });
    if (tag == nullptr) return;  // closing: the calls fail with the stream
    alarm_armed_ = true;
    alarm_at_ = at;
    alarm_.Set(threads_->cq(), GrpcTime(at), tag);
  }

  // Marks the stream failed and cancels it; its read then fails and the
  // stream finishes.
  void Fail() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!failed_) ctx_.TryCancel();
    Ended();
  }
  // Marks the stream failed after it broke by itself (Finish tells why).
  void Ended() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    failed_ = true;
    if (alarm_armed_) alarm_.Cancel();
  }

  // Ends the stream once nothing is outstanding.
  void MaybeFinish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!failed_ || !started_ || reading_ || writing_ || finishing_) return;
    finishing_ = true;
    auto self = this->shared_from_this();
    stream_->Finish(&finish_status_,
                    CallbackTag::NewForEnding(
                        threads_, [self](bool) { self->OnFinished(); }));
  }

  void OnWritten(bool ok) {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    to_write_.pop_front();
    if (!ok) {
      // The stream broke; its read fails too, and Finish says why
      // (cancelling it here would hide that).
      Ended();
    } else if (!failed_ && !to_write_.empty() && !StartWrite()) {
      Fail();
    }
    MaybeFinish();
  }

  void OnRead(bool ok) {
    Pending answered;
    bool have = false;
    absl::Status status;
    {
      absl::MutexLock lock(&mu_);
      reading_ = false;
      StreamAnswer<Response> answer;
      if (!ok) {
        Ended();  // Finish says why
      } else if (!Calls::ParseAnswer(&incoming_, &answer)) {
        broken_ = grpc::Status(
            grpc::StatusCode::INTERNAL,
            absl::StrCat("malformed answer on the ", Calls::kMethod,
                         " stream (are both tasks the same version of "
                         "distflow?)"));
        Fail();
      } else {
        auto it = pending_.find(answer.id);
        if (it != pending_.end()) {
          have = true;
          ++callbacks_running_;
          answered = std::move(it->second);
          pending_.erase(it);
          *answered.response = std::move(answer.response);
          status = CallStatus(answer.status);
        } else {
          expired_.erase(answer.id);  // answered after its deadline
        }
        // Before the next read, which gRPC may fill on another thread.
        incoming_ = AnswerMessage();
        if (!StartRead()) Fail();
      }
      MaybeFinish();
    }
    if (have) {
      answered.done(status);
      CallbacksDone(1);
    }
  }

  void OnAlarm(bool /*ok*/) {
    std::vector<Done> expired;
    {
      absl::MutexLock lock(&mu_);
      alarm_armed_ = false;
      const SteadyTime now = SteadyNow();
      SteadyTime next = SteadyTime::max();
      for (auto it = pending_.begin(); it != pending_.end();) {
        if (it->second.deadline <= now) {
          expired.push_back(std::move(it->second.done));
          if (it->second.keepalive != nullptr) {
            expired_.emplace(it->first, std::move(it->second.keepalive));
          }
          // Tells the task, where the call still runs (a RunGraph's step).
          std::optional<CallMessage> cancel = Calls::Cancel(it->first);
          if (cancel.has_value()) to_write_.push_back(*std::move(cancel));
          pending_.erase(it++);
        } else {
          next = std::min(next, it->second.deadline);
          ++it;
        }
      }
      callbacks_running_ += static_cast<int>(expired.size());
      if (!failed_ && next != SteadyTime::max()) ArmAlarm(next);
      if (!failed_ && started_ && !writing_ && !to_write_.empty() &&
          !StartWrite()) {
        Fail();
      }
    }
    const absl::Status late = CallStatus(
        grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded"));
    for (Done& done : expired) done(late);
    CallbacksDone(static_cast<int>(expired.size()));
  }

  void OnFinished() {
    absl::flat_hash_map<uint64_t, Pending> pending;
    grpc::Status ended;
    {
      absl::MutexLock lock(&mu_);
      pending.swap(pending_);
      expired_.clear();  // the task reads nothing more of this stream's
      // The caller never ends the stream but by cancelling it, so an OK end
      // means the task ended it.
      ended = !broken_.ok() ? broken_
              : finish_status_.ok()
                  ? grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                 absl::StrCat("the task ended the ",
                                              Calls::kMethod, " stream"))
                  : finish_status_;
    }
    if (ended.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      unimplemented_.store(true, std::memory_order_release);
    }
    const absl::Status status = CallStatus(ended);
    for (auto& [id, call] : pending) call.done(status);
    absl::MutexLock lock(&mu_);
    finished_ = true;
    MaybeOver();
  }

  // `n` calls' `done` have returned.
  void CallbacksDone(int n) {
    absl::MutexLock lock(&mu_);
    callbacks_running_ -= n;
    MaybeOver();
  }
  // Says the stream is over once it has finished and no `done` runs.
  void MaybeOver() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_ && callbacks_running_ == 0 && !over_.HasBeenNotified()) {
      over_.Notify();
    }
  }

  absl::Status CallStatus(const grpc::Status& s) const {
    return FromGrpcCallStatus(s, task_, address_, Calls::kMethod);
  }

  const Prepare prepare_;
  CompletionQueueThreads* const threads_;
  const std::string task_;
  const std::string address_;
  grpc::ClientContext ctx_;
  std::unique_ptr<Stream> stream_;
  grpc::Alarm alarm_;
  grpc::Status finish_status_;
  absl::Notification over_;
  std::atomic<bool> unimplemented_{false};

  absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool alarm_armed_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  // Why the stream failed, when this side broke it (a malformed answer).
  grpc::Status broken_ ABSL_GUARDED_BY(mu_);
  // `done` callbacks taken out of pending_ that have not returned yet.
  int callbacks_running_ ABSL_GUARDED_BY(mu_) = 0;
  SteadyTime alarm_at_ ABSL_GUARDED_BY(mu_) = SteadyTime::max();
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::deque<CallMessage> to_write_ ABSL_GUARDED_BY(mu_);
  AnswerMessage incoming_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);
  // The keepalives of calls past their deadline that the task has not
  // answered yet.
  absl::flat_hash_map<uint64_t, std::shared_ptr<const void>> expired_
      ABSL_GUARDED_BY(mu_);
};

// The serving side of one kind of call: handles the calls of every stream
// that callers open to this task.
template <typename Calls>
struct CallStreamMethod {
  using Request = typename Calls::Request;
  using Response = typename Calls::Response;
  using Stream = grpc::ServerAsyncReaderWriter<typename Calls::AnswerMessage,
                                               typename Calls::CallMessage>;
  // Asks the server for the next stream (the generated Request... method).
  std::function<void(grpc::ServerContext*, Stream*,
                     grpc::ServerCompletionQueue*, void* tag)>
      request;
  // Runs one call, as the unary method's handler: calls `done` exactly
  // once, from any thread; `request` and `response` live until then.
  std::function<void(const Request* request, Response* response,
                     std::function<void(const absl::Status&)> done)>
      handle;
  // Instead of `handle`: the same, with the caller's address as gRPC names
  // it (for errors and limits that name the caller).
  std::function<void(const std::string& peer, const Request* request,
                     Response* response,
                     std::function<void(const absl::Status&)> done)>
      handle_from_peer;
  // Called for each call still running when its stream breaks (the caller
  // went away) or its caller gives up on it (its deadline passed), as for a
  // cancelled unary call. May be empty.
  std::function<void(const Request& request)> on_cancel;
};

namespace call_stream_internal {

// One caller's stream: reads calls, runs each as it comes, and writes each
// answer when its call ends.
template <typename Calls>
class ServerStream : public std::enable_shared_from_this<ServerStream<Calls>> {
 public:
  using Method = CallStreamMethod<Calls>;

  ServerStream(const Method* method, grpc::ServerCompletionQueue* cq,
               CompletionQueueThreads* threads)
      : method_(method), cq_(cq), threads_(threads), stream_(&ctx_) {}

  void Await() {
    auto self = this->shared_from_this();
    CallbackTag* tag =
        CallbackTag::New(threads_, [self](bool ok) { self->OnAccepted(ok); });
    if (tag == nullptr) return;  // the server is stopping
    method_->request(&ctx_, &stream_, cq_, tag);
  }

 private:
  struct Call {
    StreamCall<typename Calls::Request> call;
    typename Calls::Response response;
    typename Calls::AnswerMessage answer;
    // Until the call is answered: its answer may still start a write, or
    // the stream's Finish.
    QueueHold* hold = nullptr;
  };

  void OnAccepted(bool ok) {
    if (!ok) return;  // the server is stopping; no stream came
    auto next = std::make_shared<ServerStream>(method_, cq_, threads_);
    next->Await();
    peer_ = ctx_.peer();  // before the first read: read-only from then on
    absl::MutexLock lock(&mu_);
    if (!StartRead()) read_ended_ = true;
    MaybeFinish();
  }

  bool StartRead() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    CallbackTag* tag = NewCallTag(threads_, this->shared_from_this(),
                                  &ServerStream::OnRead, &ctx_);
    if (tag == nullptr) return false;
    reading_ = true;
    stream_.Read(&incoming_, tag);
    return true;
  }

  bool StartWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    CallbackTag* tag = NewCallTag(threads_, this->shared_from_this(),
                                  &ServerStream::OnWritten, &ctx_);
    if (tag == nullptr) return false;
    writing_ = true;
    stream_.Write(to_write_.front()->answer, tag);
    return true;
  }

  void OnRead(bool ok) {
    std::shared_ptr<Call> call;
    std::vector<std::shared_ptr<Call>> abandoned;
    {
      absl::MutexLock lock(&mu_);
      reading_ = false;
      auto parsed = std::make_shared<Call>();
      if (!ok) {
        // The caller went away (or its connection did): the calls it still
        // waits for (steps waiting for tensors that may never come) end.
        read_ended_ = true;
        for (const auto& [id, running] : running_) abandoned.push_back(running);
      } else if (!Calls::ParseCall(&incoming_, &parsed->call) ||
                 parsed->call.id == 0 ||
                 (!parsed->call.cancel && running_.contains(parsed->call.id))) {
        read_ended_ = true;
        end_status_ = grpc::Status(
            grpc::StatusCode::INVALID_ARGUMENT,
            absl::StrCat("malformed message on the ", Calls::kMethod,
                         " stream (are both tasks the same version of "
                         "distflow?)"));
        for (const auto& [id, running] : running_) abandoned.push_back(running);
      } else {
        // Before the next read, which gRPC may fill on another thread.
        incoming_ = typename Calls::CallMessage();
        if (parsed->call.cancel) {
          auto it = running_.find(parsed->call.id);
          if (it != running_.end()) abandoned.push_back(it->second);
        } else {
          call = std::move(parsed);
          call->hold = QueueHold::New(threads_);
          running_.emplace(call->call.id, call);
        }
        if (!StartRead()) read_ended_ = true;
      }
      MaybeFinish();
    }
    if (call != nullptr) {
      auto self = this->shared_from_this();
      auto answered = std::make_shared<std::atomic<bool>>(false);
      auto done = [self, call, answered](const absl::Status& s) {
        if (!answered->exchange(true)) self->Answer(call, s);
      };
      // The last line of defence: a handler that throws fails its call, not
      // the process.
      try {
        if (method_->handle_from_peer) {
          method_->handle_from_peer(peer_, &call->call.request, &call->response,
                                    done);
        } else {
          method_->handle(&call->call.request, &call->response, done);
        }
      } catch (const std::exception& e) {
        done(absl::InternalError(absl::StrCat(
            Calls::kMethod, " failed on the task that served it: ", e.what())));
      }
    }
    if (method_->on_cancel) {
      for (const auto& running : abandoned) {
        method_->on_cancel(running->call.request);
      }
    }
  }

  void Answer(const std::shared_ptr<Call>& call, const absl::Status& s) {
    {
      absl::MutexLock lock(&mu_);
      running_.erase(call->call.id);
      if (!read_ended_ && !write_failed_) {
        call->answer = Calls::Answer(call->call.id, s, &call->response);
        to_write_.push_back(call);
        if (!writing_ && !StartWrite()) {
          write_failed_ = true;
          to_write_.clear();
        }
      }
      MaybeFinish();
    }
    // After any write or Finish it started: the queue now waits for those.
    call->hold->Drop();
  }

  void OnWritten(bool ok) {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    to_write_.pop_front();
    if (!ok) {
      write_failed_ = true;
      to_write_.clear();
      ctx_.TryCancel();  // the read ends too
    } else if (!to_write_.empty() && !StartWrite()) {
      write_failed_ = true;
      to_write_.clear();
    }
    MaybeFinish();
  }

  // Ends the stream once the caller has stopped sending and every answer
  // that can still go has gone.
  void MaybeFinish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!read_ended_ || reading_ || writing_ || !running_.empty() ||
        finishing_) {
      return;
    }
    finishing_ = true;
    auto self = this->shared_from_this();
    stream_.Finish(end_status_,
                   CallbackTag::NewForEnding(threads_, [self](bool) {}));
  }

  const Method* const method_;
  grpc::ServerCompletionQueue* const cq_;
  CompletionQueueThreads* const threads_;
  grpc::ServerContext ctx_;
  typename Method::Stream stream_;
  std::string peer_;  // the caller, as gRPC names it

  absl::Mutex mu_;
  typename Calls::CallMessage incoming_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, std::shared_ptr<Call>> running_
      ABSL_GUARDED_BY(mu_);
  std::deque<std::shared_ptr<Call>> to_write_ ABSL_GUARDED_BY(mu_);
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool read_ended_ ABSL_GUARDED_BY(mu_) = false;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  // How the stream ends: OK, or why this side ended it.
  grpc::Status end_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace call_stream_internal

// Starts waiting for streams of `method` (which outlives the queue).
template <typename Calls>
void AwaitCallStreams(const CallStreamMethod<Calls>* method,
                      grpc::ServerCompletionQueue* cq,
                      CompletionQueueThreads* threads) {
  std::make_shared<call_stream_internal::ServerStream<Calls>>(method, cq,
                                                              threads)
      ->Await();
}

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_CALL_STREAM_H_
