#include "distributed/rpc/run_graph_stream.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "distributed/rpc/callback_tag.h"
#include "distributed/rpc/grpc_util.h"

namespace distflow {

bool UseRunGraphStream() {
  static const bool use = [] {
    const char* value = std::getenv("DISTFLOW_RUN_GRAPH_STREAM");
    return value == nullptr || std::strcmp(value, "0") != 0;
  }();
  return use;
}

// ----- The calling side -----

RunGraphStreamClient::RunGraphStreamClient(proto::WorkerService::Stub* stub,
                                           CompletionQueueThreads* threads,
                                           std::string task,
                                           std::string address)
    : stub_(stub),
      threads_(threads),
      task_(std::move(task)),
      address_(std::move(address)) {}

std::shared_ptr<RunGraphStreamClient> RunGraphStreamClient::Open(
    proto::WorkerService::Stub* stub, CompletionQueueThreads* threads,
    std::string task, std::string address) {
  return std::make_shared<RunGraphStreamClient>(stub, threads, std::move(task),
                                                std::move(address));
}

bool RunGraphStreamClient::Start() {
  CallbackTag* tag = NewCallTag(threads_, shared_from_this(),
                                &RunGraphStreamClient::OnStarted, &ctx_);
  if (tag == nullptr) {  // this task's RPC layer is shutting down
    failed_ = true;
    over_.Notify();
    return false;
  }
  stream_ = stub_->PrepareAsyncRunGraphStream(&ctx_, threads_->cq());
  stream_->StartCall(tag);
  return true;
}

bool RunGraphStreamClient::Call(const proto::RunGraphRequest& request,
                                proto::RunGraphResponse* response,
                                absl::Duration timeout, Done done) {
  absl::MutexLock lock(&mu_);
  if (failed_) return false;
  // The stream starts with its first call, which it therefore always takes.
  if (stream_ == nullptr && !Start()) return false;
  const uint64_t id = next_id_++;
  const absl::Time deadline = absl::Now() + timeout;
  proto::RunGraphStreamRequest& message = to_write_.emplace_back();
  message.set_id(id);
  *message.mutable_request() = request;
  pending_.emplace(id, Pending{response, std::move(done), deadline});
  if (!alarm_armed_) {
    ArmAlarm(deadline);
  } else if (deadline < alarm_at_) {
    alarm_.Cancel();  // OnAlarm arms it again for the earliest deadline
  }
  // Before the stream has started, OnStarted sends what is queued.
  if (started_ && !writing_ && !StartWrite()) Fail();
  return true;
}

void RunGraphStreamClient::Close() {
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

void RunGraphStreamClient::OnStarted(bool ok) {
  absl::MutexLock lock(&mu_);
  started_ = true;
  // A stream that failed to start fails its first read too, and then
  // finishes with the reason.
  if (!StartRead()) Fail();
  if (ok && !failed_ && !to_write_.empty() && !StartWrite()) Fail();
  MaybeFinish();
}

bool RunGraphStreamClient::StartRead() {
  CallbackTag* tag = NewCallTag(threads_, shared_from_this(),
                                &RunGraphStreamClient::OnRead, &ctx_);
  if (tag == nullptr) return false;
  reading_ = true;
  stream_->Read(&incoming_, tag);
  return true;
}

bool RunGraphStreamClient::StartWrite() {
  CallbackTag* tag = NewCallTag(threads_, shared_from_this(),
                                &RunGraphStreamClient::OnWritten, &ctx_);
  if (tag == nullptr) return false;
  writing_ = true;
  stream_->Write(to_write_.front(), tag);
  return true;
}

void RunGraphStreamClient::ArmAlarm(absl::Time at) {
  auto self = shared_from_this();
  CallbackTag* tag =
      CallbackTag::New(threads_, [self](bool ok) { self->OnAlarm(ok); });
  if (tag == nullptr) return;  // closing: the calls fail with the stream
  alarm_armed_ = true;
  alarm_at_ = at;
  alarm_.Set(threads_->cq(), absl::ToChronoTime(at), tag);
}

void RunGraphStreamClient::Fail() {
  if (!failed_) ctx_.TryCancel();
  Ended();
}

void RunGraphStreamClient::Ended() {
  failed_ = true;
  if (alarm_armed_) alarm_.Cancel();
}

void RunGraphStreamClient::MaybeFinish() {
  if (!failed_ || !started_ || reading_ || writing_ || finishing_) return;
  finishing_ = true;
  auto self = shared_from_this();
  stream_->Finish(&finish_status_,
                  CallbackTag::NewForEnding(
                      threads_, [self](bool) { self->OnFinished(); }));
}

void RunGraphStreamClient::OnWritten(bool ok) {
  absl::MutexLock lock(&mu_);
  writing_ = false;
  to_write_.pop_front();
  if (!ok) {
    // The stream broke; its read fails too, and Finish says why (cancelling
    // it here would hide that).
    Ended();
  } else if (!failed_ && !to_write_.empty() && !StartWrite()) {
    Fail();
  }
  MaybeFinish();
}

void RunGraphStreamClient::OnRead(bool ok) {
  Pending answered;
  bool have = false;
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    reading_ = false;
    if (ok) {
      auto it = pending_.find(incoming_.id());
      if (it != pending_.end()) {  // else: it timed out already
        have = true;
        ++callbacks_running_;
        answered = std::move(it->second);
        pending_.erase(it);
        answered.response->Swap(incoming_.mutable_response());
        status = CallStatus(
            incoming_.code() == 0
                ? grpc::Status::OK
                : grpc::Status(static_cast<grpc::StatusCode>(incoming_.code()),
                               incoming_.message()));
      }
      incoming_.Clear();
      if (!StartRead()) Fail();
    } else {
      Ended();  // Finish says why
    }
    MaybeFinish();
  }
  if (have) {
    answered.done(status);
    CallbacksDone(1);
  }
}

void RunGraphStreamClient::CallbacksDone(int n) {
  absl::MutexLock lock(&mu_);
  callbacks_running_ -= n;
  MaybeOver();
}

void RunGraphStreamClient::MaybeOver() {
  if (finished_ && callbacks_running_ == 0 && !over_.HasBeenNotified()) {
    over_.Notify();
  }
}

void RunGraphStreamClient::OnAlarm(bool ok) {
  std::vector<Done> expired;
  std::vector<uint64_t> expired_ids;
  {
    absl::MutexLock lock(&mu_);
    alarm_armed_ = false;
    const absl::Time now = absl::Now();
    absl::Time next = absl::InfiniteFuture();
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.deadline <= now) {
        expired.push_back(std::move(it->second.done));
        expired_ids.push_back(it->first);
        pending_.erase(it++);
      } else {
        next = std::min(next, it->second.deadline);
        ++it;
      }
    }
    callbacks_running_ += static_cast<int>(expired.size());
    if (!failed_ && next != absl::InfiniteFuture()) ArmAlarm(next);
    // The task aborts those steps, as the end of a unary call's deadline
    // would make it do.
    for (uint64_t id : expired_ids) {
      proto::RunGraphStreamRequest& cancel = to_write_.emplace_back();
      cancel.set_id(id);
      cancel.set_cancel(true);
    }
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

void RunGraphStreamClient::OnFinished() {
  absl::flat_hash_map<uint64_t, Pending> pending;
  {
    absl::MutexLock lock(&mu_);
    pending.swap(pending_);
  }
  // The caller never ends the stream but by cancelling it, so an OK end
  // means the task ended it.
  const grpc::Status ended =
      finish_status_.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                         "the task ended the RunGraph stream")
                          : finish_status_;
  const absl::Status status = CallStatus(ended);
  for (auto& [id, call] : pending) call.done(status);
  absl::MutexLock lock(&mu_);
  finished_ = true;
  MaybeOver();
}

absl::Status RunGraphStreamClient::CallStatus(const grpc::Status& s) const {
  return FromGrpcCallStatus(s, task_, address_, "RunGraph");
}

// ----- The serving side -----

namespace {

// One caller's stream: reads requests, runs each as it comes, and writes
// each answer when its step's part ends.
class ServerStream : public std::enable_shared_from_this<ServerStream> {
 public:
  ServerStream(const RunGraphStreamMethod* method,
               grpc::ServerCompletionQueue* cq, CompletionQueueThreads* threads)
      : method_(method), cq_(cq), threads_(threads), stream_(&ctx_) {}

  void Await() {
    auto self = shared_from_this();
    CallbackTag* tag =
        CallbackTag::New(threads_, [self](bool ok) { self->OnAccepted(ok); });
    if (tag == nullptr) return;  // the server is stopping
    method_->request(&ctx_, &stream_, cq_, tag);
  }

 private:
  struct Call {
    proto::RunGraphStreamRequest request;
    proto::RunGraphStreamResponse response;
    // Until the call is answered: its answer may still start a write, or
    // the stream's Finish.
    QueueHold* hold = nullptr;
  };

  void OnAccepted(bool ok) {
    if (!ok) return;  // the server is stopping; no stream came
    auto next = std::make_shared<ServerStream>(method_, cq_, threads_);
    next->Await();
    absl::MutexLock lock(&mu_);
    if (!StartRead()) read_ended_ = true;
    MaybeFinish();
  }

  bool StartRead() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    CallbackTag* tag =
        NewCallTag(threads_, shared_from_this(), &ServerStream::OnRead, &ctx_);
    if (tag == nullptr) return false;
    reading_ = true;
    stream_.Read(&incoming_, tag);
    return true;
  }

  bool StartWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    CallbackTag* tag = NewCallTag(threads_, shared_from_this(),
                                  &ServerStream::OnWritten, &ctx_);
    if (tag == nullptr) return false;
    writing_ = true;
    stream_.Write(to_write_.front()->response, tag);
    return true;
  }

  void OnRead(bool ok) {
    std::shared_ptr<Call> call;
    std::vector<std::shared_ptr<Call>> abandoned;
    {
      absl::MutexLock lock(&mu_);
      reading_ = false;
      if (ok && incoming_.cancel()) {
        auto it = running_.find(incoming_.id());
        if (it != running_.end()) abandoned.push_back(it->second);
        incoming_.Clear();
        if (!StartRead()) read_ended_ = true;
      } else if (ok) {
        call = std::make_shared<Call>();
        call->hold = QueueHold::New(threads_);
        call->request.Swap(&incoming_);
        running_.emplace(call->request.id(), call);
        if (!StartRead()) read_ended_ = true;
      } else {
        // The caller went away (or its connection did): the steps it still
        // waits for would wait for tensors that may never come.
        read_ended_ = true;
        for (const auto& [id, running] : running_) abandoned.push_back(running);
      }
      MaybeFinish();
    }
    if (call != nullptr) {
      auto self = shared_from_this();
      method_->handle(
          &call->request.request(), call->response.mutable_response(),
          [self, call](const absl::Status& s) { self->Answer(call, s); });
    }
    for (const auto& running : abandoned) {
      method_->on_cancel(running->request.request());
    }
  }

  void Answer(const std::shared_ptr<Call>& call, const absl::Status& s) {
    {
      absl::MutexLock lock(&mu_);
      AnswerLocked(call, s);
    }
    // After any write or Finish it started: the queue now waits for those.
    call->hold->Drop();
  }

  void AnswerLocked(const std::shared_ptr<Call>& call, const absl::Status& s)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    running_.erase(call->request.id());
    if (!read_ended_ && !write_failed_) {
      call->response.set_id(call->request.id());
      call->response.set_code(static_cast<int>(s.code()));
      call->response.set_message(std::string(s.message()));
      to_write_.push_back(call);
      if (!writing_ && !StartWrite()) {
        write_failed_ = true;
        to_write_.clear();
      }
    }
    MaybeFinish();
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
    auto self = shared_from_this();
    stream_.Finish(grpc::Status::OK,
                   CallbackTag::NewForEnding(threads_, [self](bool) {}));
  }

  const RunGraphStreamMethod* const method_;
  grpc::ServerCompletionQueue* const cq_;
  CompletionQueueThreads* const threads_;
  grpc::ServerContext ctx_;
  grpc::ServerAsyncReaderWriter<proto::RunGraphStreamResponse,
                                proto::RunGraphStreamRequest>
      stream_;

  absl::Mutex mu_;
  proto::RunGraphStreamRequest incoming_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, std::shared_ptr<Call>> running_
      ABSL_GUARDED_BY(mu_);
  std::deque<std::shared_ptr<Call>> to_write_ ABSL_GUARDED_BY(mu_);
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool read_ended_ ABSL_GUARDED_BY(mu_) = false;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

void AwaitRunGraphStreams(const RunGraphStreamMethod* method,
                          grpc::ServerCompletionQueue* cq,
                          CompletionQueueThreads* threads) {
  std::make_shared<ServerStream>(method, cq, threads)->Await();
}

}  // namespace distflow
