#include "distributed/rpc/grpc_remote_worker.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "base/logging.h"
#include "distributed/rpc/client_unary_call.h"
#include "distributed/rpc/completion_queue_spin.h"
#include "distributed/rpc/data_connection.h"
#include "distributed/rpc/data_socket.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/push_stream.h"
#include "distributed/rpc/run_graph_stream.h"
#include "distributed/rpc/same_host.h"
#include "distributed/rpc/tensor_wire.h"
#include "grpcpp/generic/generic_stub.h"
#include "proto/worker.grpc.pb.h"

namespace distflow {
namespace {

constexpr char kPushTensorMethod[] = "/distflow.proto.WorkerService/PushTensor";
// How long a data connection that could not be opened is not tried again
// (unless the task offers another).
constexpr absl::Duration kDataConnectionRetry = absl::Minutes(1);
constexpr char kPushTensorStreamMethod[] =
    "/distflow.proto.WorkerService/PushTensorStream";

// The stream that one kind of call to a task goes on (call_stream.h): opened
// by the first call, and again after it fails.
template <typename Calls>
struct StreamSlot {
  using Client = CallStreamClient<Calls>;
  std::shared_ptr<Client> stream;
  // Failed streams that were replaced, until they are over: the callbacks of
  // the calls that waited on them may still run.
  std::vector<std::shared_ptr<Client>> retired;
  typename Client::Prepare prepare;
  // Set once the task has answered a stream with UNIMPLEMENTED (an older
  // version): then these calls go unary. (Read without the lock.)
  std::atomic<bool> unimplemented{false};

  void Retire(const std::shared_ptr<Client>& failed) {
    if (stream != failed) return;
    retired.erase(std::remove_if(retired.begin(), retired.end(),
                                 [](const auto& s) { return s->Over(); }),
                  retired.end());
    retired.push_back(std::move(stream));
  }
  // Every stream, for closing.
  std::vector<std::shared_ptr<Client>> TakeAll() {
    std::vector<std::shared_ptr<Client>> all = std::move(retired);
    if (stream != nullptr) all.push_back(std::move(stream));
    return all;
  }
};

class GrpcRemoteWorker : public WorkerInterface {
 public:
  GrpcRemoteWorker(std::shared_ptr<grpc::Channel> channel, std::string task,
                   std::string address, RpcDeadlines deadlines,
                   const PushPaths& paths, CompletionQueueThreads* threads)
      : owned_threads_(threads == nullptr
                           ? std::make_unique<CompletionQueueThreads>(
                                 "rpc_client", nullptr, 1)
                           : nullptr),
        threads_(threads == nullptr ? owned_threads_.get() : threads),
        stub_(proto::WorkerService::NewStub(channel)),
        generic_(channel),
        task_(std::move(task)),
        address_(std::move(address)),
        deadlines_(deadlines),
        same_host_(paths.same_host && !SameHostIdentity().empty()),
        data_connection_(paths.data_connection),
        data_sockets_(paths.data_sockets) {
    run_graph_stream_.prepare = [this](grpc::ClientContext* ctx,
                                       grpc::CompletionQueue* cq) {
      return stub_->PrepareAsyncRunGraphStream(ctx, cq);
    };
    push_stream_.prepare = [this](grpc::ClientContext* ctx,
                                  grpc::CompletionQueue* cq) {
      return generic_.PrepareCall(ctx, kPushTensorStreamMethod, cq);
    };
  }

  void GetStatusAsync(const proto::GetStatusRequest* request,
                      proto::GetStatusResponse* response,
                      StatusCallback done) override {
    Call(deadlines_.control_ms, "GetStatus", std::move(done),
         [&](grpc::ClientContext* ctx, grpc::CompletionQueue* cq,
             grpc::Status* status, void* tag) {
           return Unary(stub_->PrepareAsyncGetStatus(ctx, *request, cq),
                        response, status, tag);
         });
  }
  void RegisterGraphAsync(const proto::RegisterGraphRequest* request,
                          proto::RegisterGraphResponse* response,
                          StatusCallback done) override {
    Call(deadlines_.control_ms, "RegisterGraph", std::move(done),
         [&](grpc::ClientContext* ctx, grpc::CompletionQueue* cq,
             grpc::Status* status, void* tag) {
           return Unary(stub_->PrepareAsyncRegisterGraph(ctx, *request, cq),
                        response, status, tag);
         });
  }
  void DeregisterGraphAsync(const proto::DeregisterGraphRequest* request,
                            proto::DeregisterGraphResponse* response,
                            StatusCallback done) override {
    Call(deadlines_.control_ms, "DeregisterGraph", std::move(done),
         [&](grpc::ClientContext* ctx, grpc::CompletionQueue* cq,
             grpc::Status* status, void* tag) {
           return Unary(stub_->PrepareAsyncDeregisterGraph(ctx, *request, cq),
                        response, status, tag);
         });
  }
  void RunGraphAsync(const proto::RunGraphRequest* request,
                     proto::RunGraphResponse* response,
                     StatusCallback done) override {
    if (request->feed_size() == 0) {
      if (std::shared_ptr<DataConnection> data = ReadyDataConnection()) {
        if (data->RunGraph(*request, response,
                           absl::Milliseconds(deadlines_.step_ms),
                           std::move(done))) {
          return;
        }
      }
    }
    // The answer may offer a data connection for the next steps.
    done = [this, response, done = std::move(done)](const absl::Status& s) {
      if (response->has_data_connection()) {
        TakeDataConnectionOffer(response->data_connection());
      }
      done(s);
    };
    if (OnStream(*request)) {
      CallOnStream(&run_graph_stream_, *request, response, std::move(done),
                   /*keepalive=*/nullptr,
                   [this, request, response](StatusCallback done) {
                     RunGraphUnary(request, response, std::move(done));
                   });
      return;
    }
    RunGraphUnary(request, response, std::move(done));
  }
  void RunGraphUnary(const proto::RunGraphRequest* request,
                     proto::RunGraphResponse* response, StatusCallback done) {
    Call(deadlines_.step_ms, "RunGraph", std::move(done),
         [&](grpc::ClientContext* ctx, grpc::CompletionQueue* cq,
             grpc::Status* status, void* tag) {
           return Unary(stub_->PrepareAsyncRunGraph(ctx, *request, cq),
                        response, status, tag);
         });
  }
  absl::Status RunGraphWithTensors(const proto::RunGraphRequest* request,
                                   std::vector<Tensor> feeds,
                                   std::vector<Tensor>* fetches) override {
    // This thread waits for the reply on a queue of its own, as gRPC's
    // blocking calls do (the callback form would read it on another thread
    // and wake this one), but polls it for a while before it sleeps: a small
    // step's reply comes back in tens of microseconds.
    proto::RunGraphRequest with_feeds;
    if (!feeds.empty()) {
      with_feeds = *request;
      AddRunGraphFeeds(feeds, &with_feeds);
      request = &with_feeds;
    }
    proto::RunGraphResponse response;
    if (request->feed_size() == 0) {
      if (std::shared_ptr<DataConnection> data = ReadyDataConnection()) {
        std::optional<absl::Status> s = WaitForAnswer([&](StatusCallback done) {
          return data->RunGraph(*request, &response,
                                absl::Milliseconds(deadlines_.step_ms),
                                std::move(done));
        });
        if (s.has_value()) {
          if (!s->ok()) return *s;
          return DecodeRunGraphFetches(response, request->num_fetches(),
                                       fetches);
        }
      }
    }
    if (OnStream(*request)) {
      absl::Status s = WaitOnStream(*request, &response);
      if (response.has_data_connection()) {
        TakeDataConnectionOffer(response.data_connection());
      }
      if (!s.ok()) return s;
      return DecodeRunGraphFetches(response, request->num_fetches(), fetches);
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(DeadlineAfterMs(deadlines_.step_ms));
    grpc::CompletionQueue cq;
    grpc::Status status;
    auto reader = stub_->PrepareAsyncRunGraph(&ctx, *request, &cq);
    reader->StartCall();
    reader->Finish(&response, &status, &cq);
    void* tag = nullptr;
    bool ok = false;
    // The call's only event: Finish always completes (by the deadline at
    // the latest), so this wait is bounded.
    NextAfterSpinning(&cq, CallerSpin(), &tag, &ok);
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
    absl::Status s = FromGrpcCallStatus(status, task_, address_, "RunGraph");
    if (!s.ok()) return s;
    return DecodeRunGraphFetches(response, request->num_fetches(), fetches);
  }
  void AbortStepAsync(const proto::AbortStepRequest* request,
                      proto::AbortStepResponse* response,
                      StatusCallback done) override {
    Call(deadlines_.control_ms, "AbortStep", std::move(done),
         [&](grpc::ClientContext* ctx, grpc::CompletionQueue* cq,
             grpc::Status* status, void* tag) {
           // An abort after a failed push waits for the receiver to be
           // reachable again (see AbortStepRequest.wait_for_ready).
           ctx->set_wait_for_ready(request->wait_for_ready());
           return Unary(stub_->PrepareAsyncAbortStep(ctx, *request, cq),
                        response, status, tag);
         });
  }
  void ShutdownAsync(const proto::ShutdownRequest* request,
                     proto::ShutdownResponse* response,
                     StatusCallback done) override {
    Call(deadlines_.control_ms, "Shutdown", std::move(done),
         [&](grpc::ClientContext* ctx, grpc::CompletionQueue* cq,
             grpc::Status* status, void* tag) {
           return Unary(stub_->PrepareAsyncShutdown(ctx, *request, cq),
                        response, status, tag);
         });
  }

  void PushTensorAsync(int64_t step_id, const std::string& key, Tensor value,
                       StatusCallback done) override {
    if (same_host_ && !same_host_refused_.load(std::memory_order_relaxed) &&
        DataTypeSize(value.dtype()) != 0 &&
        static_cast<int64_t>(value.TotalBytes()) >= kMinSameHostBytes) {
      PushSameHost(step_id, key, value, std::move(done));
    } else {
      PushBytes(step_id, key, value, std::move(done));
    }
  }

  // Calls may still be in flight when this is destroyed (a send completes
  // before its push is acknowledged; a server stops while its master's calls
  // to a hung task wait), and their callbacks use this object: cancel them
  // and wait for the callbacks.
  ~GrpcRemoteWorker() override {
    // (owned_threads_, if any, outlives the calls: it is destroyed last.)
    std::shared_ptr<DataConnection> data;
    {
      absl::MutexLock lock(&data_mu_);
      data_closed_ = true;
      data = std::move(data_);
    }
    // Fails its waiting pushes and ends its threads (see ~DataConnection).
    data.reset();
    std::vector<std::shared_ptr<RunGraphStreamClient>> run_graph_streams;
    std::vector<std::shared_ptr<PushStreamClient>> push_streams;
    {
      absl::MutexLock lock(&stream_mu_);
      streams_closed_ = true;
      run_graph_streams = run_graph_stream_.TakeAll();
      push_streams = push_stream_.TakeAll();
    }
    for (const auto& stream : run_graph_streams) stream->Close();
    for (const auto& stream : push_streams) stream->Close();
    std::vector<std::shared_ptr<grpc::ClientContext>> calls;
    {
      absl::MutexLock lock(&tracked_mu_);
      closing_ = true;
      for (const auto& [id, ctx] : tracked_) calls.push_back(ctx);
    }
    for (const auto& ctx : calls) ctx->TryCancel();
    calls.clear();
    absl::MutexLock lock(&tracked_mu_);
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(tracked_mu_) {
      return tracked_.empty();
    };
    tracked_mu_.Await(absl::Condition(&idle));
  }

 private:
  // Starts a prepared call: its reply goes to `response`.
  template <typename Reader, typename Response>
  static std::shared_ptr<void> Unary(std::unique_ptr<Reader> reader,
                                     Response* response, grpc::Status* status,
                                     void* tag) {
    reader->StartCall();
    reader->Finish(response, status, tag);
    return std::shared_ptr<void>(std::move(reader));
  }

  // Starts a unary call with `start`, tracked (see the destructor); `done`
  // gets its status, naming this task where the transport failed.
  void Call(int64_t deadline_ms, const char* method, StatusCallback done,
            const ClientUnaryCall::StartFn& start) {
    uint64_t id = 0;
    std::shared_ptr<grpc::ClientContext> ctx = StartTracked(deadline_ms, &id);
    ClientUnaryCall::Start(
        threads_, std::move(ctx), start,
        [this, id, method, done = std::move(done)](const grpc::Status& s) {
          done(FromGrpcCallStatus(s, task_, address_, method));
          EndTracked(id);  // the last use of this object
        });
  }

  // Whether a RunGraph goes on the stream: unless turned off, the task does
  // not serve it, or it carries feeds (which the stream's message would
  // copy).
  bool OnStream(const proto::RunGraphRequest& request) const {
    return UseRunGraphStream() && !RunGraphStreamUnimplemented() &&
           request.feed_size() == 0;
  }

  // A slot's `unimplemented` flag is atomic and read without stream_mu_, which
  // guards the rest of the slot.
  bool RunGraphStreamUnimplemented() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return run_graph_stream_.unimplemented.load();
  }
  bool PushStreamUnimplemented() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return push_stream_.unimplemented.load();
  }

  // Sends a call on `slot`'s stream to this task, opening one if there is
  // none or the last one failed. `keepalive`: see CallStreamClient::Call. A
  // task of an older version, which does not serve the stream, gets this
  // call and every later one of its kind by `unary(done)` instead.
  template <typename Calls>
  void CallOnStream(StreamSlot<Calls>* slot,
                    const typename Calls::Request& request,
                    typename Calls::Response* response, StatusCallback done,
                    std::shared_ptr<const void> keepalive,
                    std::function<void(StatusCallback)> unary) {
    // A stream fails only after it has been opened, so a second one takes
    // the call unless this task's RPC layer is shutting down.
    for (int attempt = 0; attempt < 2; ++attempt) {
      std::shared_ptr<CallStreamClient<Calls>> stream;
      {
        absl::MutexLock lock(&stream_mu_);
        if (streams_closed_) break;
        if (slot->stream == nullptr) {
          slot->stream = CallStreamClient<Calls>::Open(slot->prepare, threads_,
                                                       task_, address_);
        }
        stream = slot->stream;
      }
      auto answered = [this, slot, stream, done, unary](const absl::Status& s) {
        if (s.ok() || !stream->Unimplemented()) {
          done(s);
          return;
        }
        if (!slot->unimplemented.exchange(true)) {
          DF_LOG(Warning) << "task " << task_ << " at " << address_
                          << " does not serve " << Calls::kMethod
                          << " on a stream (" << s.message()
                          << "); using unary calls";
        }
        unary(done);
      };
      if (stream->Call(request, response,
                       absl::Milliseconds(deadlines_.step_ms),
                       std::move(answered), keepalive)) {
        return;
      }
      absl::MutexLock lock(&stream_mu_);
      slot->Retire(stream);
    }
    done(FromGrpcCallStatus(
        grpc::Status(grpc::StatusCode::CANCELLED,
                     "this task's RPC layer is shutting down"),
        task_, address_, Calls::kMethod));
  }

  // The blocking form of a call on the stream.
  absl::Status WaitOnStream(const proto::RunGraphRequest& request,
                            proto::RunGraphResponse* response) {
    return *WaitForAnswer([&](StatusCallback done) {
      CallOnStream(&run_graph_stream_, request, response, std::move(done),
                   /*keepalive=*/nullptr,
                   [this, &request, response](StatusCallback done) {
                     // (The caller waits, so `request` outlives the call.)
                     RunGraphUnary(&request, response, std::move(done));
                   });
      return true;
    });
  }

  // Starts a call with `start` and waits for its status: this thread polls
  // for it for a while before it sleeps (a small step's answer comes back in
  // tens of microseconds). Nothing when `start` did not take the call.
  static std::optional<absl::Status> WaitForAnswer(
      const std::function<bool(StatusCallback)>& start) {
    struct State {
      std::atomic<bool> answered{false};
      absl::Notification done;
      absl::Status status;
    };
    auto state = std::make_shared<State>();
    if (!start([state](const absl::Status& s) {
          state->status = s;
          state->answered.store(true, std::memory_order_release);
          state->done.Notify();
        })) {
      return std::nullopt;
    }
    // Yielding between looks: the thread that reads the answer may have
    // been woken onto this core, and would otherwise wait for the spin to
    // end (a tiny step then took 56 us instead of 15, in whole rounds).
    const SteadyTime until = SteadyAfter(SteadyNow(), CallerSpin());
    while (!state->answered.load(std::memory_order_acquire) &&
           SteadyNow() < until) {
      std::this_thread::yield();
    }
    state->done.WaitForNotification();
    return state->status;
  }

  using PushDone = std::function<void(const absl::Status&,
                                      const proto::PushTensorResponse&)>;

  // Sends one PushTensor message: on the push stream if it is on and the
  // message is a whole push, else as a unary call. `done` gets the call's
  // status, naming this task where the transport failed, and the answer.
  // `keepalive` is held until the task has answered (or cannot any more),
  // even past the deadline: the tensor of a same-host offer, which the task
  // reads out of this process's memory.
  void Push(const grpc::ByteBuffer& request, bool whole, PushDone done,
            std::shared_ptr<const void> keepalive = nullptr) {
    struct State {
      grpc::ByteBuffer request;
      grpc::ByteBuffer unary_response;
      proto::PushTensorResponse response;
      PushDone done;
      std::shared_ptr<const void> keepalive;
    };
    auto state = std::make_shared<State>();
    state->request = request;
    state->done = std::move(done);
    state->keepalive = keepalive;
    if (whole && UsePushStream() && !PushStreamUnimplemented()) {
      CallOnStream(
          &push_stream_, request, &state->response,
          [state](const absl::Status& s) { state->done(s, state->response); },
          std::move(keepalive),
          [this, state](StatusCallback) { PushUnary(state); });
      return;
    }
    PushUnary(state);
  }

  // Sends `state->request` as a unary PushTensor call.
  template <typename State>
  void PushUnary(const std::shared_ptr<State>& state) {
    uint64_t id = 0;
    std::shared_ptr<grpc::ClientContext> ctx =
        StartTracked(deadlines_.step_ms, &id);
    ClientUnaryCall::Start(
        threads_, std::move(ctx),
        [&](grpc::ClientContext* ctx, grpc::CompletionQueue* cq,
            grpc::Status* status, void* tag) {
          return Unary(generic_.PrepareUnaryCall(ctx, kPushTensorMethod,
                                                 state->request, cq),
                       &state->unary_response, status, tag);
        },
        [this, id, state](grpc::Status s) {
          if (s.ok() &&
              !ProtoFromByteBuffer(state->unary_response, &state->response)) {
            s = grpc::Status(grpc::StatusCode::INTERNAL,
                             "unreadable PushTensor response");
          }
          state->done(FromGrpcCallStatus(s, task_, address_, "PushTensor"),
                      state->response);
          EndTracked(id);  // the last use of this object
        });
  }

  // Sends the tensor's bytes: on the data connection if there is one, else
  // over gRPC.
  void PushBytes(int64_t step_id, const std::string& key, const Tensor& value,
                 StatusCallback done) {
    if (DataTypeSize(value.dtype()) != 0) {
      if (std::shared_ptr<DataConnection> data = ReadyDataConnection()) {
        if (data->Push(step_id, key, value,
                       absl::Milliseconds(deadlines_.step_ms),
                       std::move(done))) {
          return;
        }
      }
    }
    PushOverConnection(step_id, key, value, std::move(done));
  }

  // Sends the tensor's bytes over gRPC, in chunks.
  void PushOverConnection(int64_t step_id, const std::string& key,
                          const Tensor& value, StatusCallback done) {
    // Every chunk goes at once (they share the tensor's buffer); the push is
    // done when the last is acknowledged, with the first error if any.
    struct State {
      std::atomic<int> pending{0};
      absl::Mutex mu;
      absl::Status status;
      StatusCallback done;
    };
    auto state = std::make_shared<State>();
    std::vector<grpc::ByteBuffer> requests =
        EncodePushTensor(step_id, key, value);
    state->pending = static_cast<int>(requests.size());
    state->done = std::move(done);
    // (A string tensor, whose bytes are in its header, stays off the stream:
    // the stream's message rewrites the header.)
    const bool whole = requests.size() == 1 && DataTypeSize(value.dtype()) != 0;
    for (const grpc::ByteBuffer& request : requests) {
      Push(request, whole,
           [this, state](const absl::Status& s,
                         const proto::PushTensorResponse& response) {
             if (response.has_data_connection()) {
               TakeDataConnectionOffer(response.data_connection());
             }
             if (!s.ok()) {
               absl::MutexLock lock(&state->mu);
               if (state->status.ok()) state->status = s;
             }
             if (state->pending.fetch_sub(1) == 1) {
               absl::Status result;
               {
                 absl::MutexLock lock(&state->mu);
                 result = state->status;
               }
               state->done(result);
             }
           });
    }
  }

  // The data connection to this task, if there is one and it is ready.
  std::shared_ptr<DataConnection> ReadyDataConnection() {
    if (!data_connection_) return nullptr;
    std::shared_ptr<DataConnection> ended;  // let go of outside the lock
    absl::MutexLock lock(&data_mu_);
    if (data_ == nullptr) return nullptr;
    switch (data_->state()) {
      case DataConnection::State::kConnecting:
        return nullptr;
      case DataConnection::State::kReady:
        return data_;
      case DataConnection::State::kRefused:
      case DataConnection::State::kBroken:
        ended = TakeEndedConnection();
        return nullptr;
    }
    return nullptr;
  }

  // Opens a data connection where this task's answer says, unless one is
  // open or opening, or they are off, or this one was refused a short while
  // ago.
  void TakeDataConnectionOffer(const proto::DataConnectionOffer& offer) {
    if (!data_connection_) return;
    std::shared_ptr<DataConnection> ended;  // let go of outside the lock
    absl::MutexLock lock(&data_mu_);
    if (data_closed_) return;
    if (data_ != nullptr) {
      const DataConnection::State state = data_->state();
      if (state == DataConnection::State::kConnecting ||
          state == DataConnection::State::kReady) {
        return;
      }
      ended = TakeEndedConnection();
    }
    if (offer.token() == refused_token_ && refused_at_.has_value() &&
        SteadySince(*refused_at_) < kDataConnectionRetry) {
      return;
    }
    data_token_ = offer.token();
    data_ = std::make_shared<DataConnection>(HostOfAddress(address_),
                                             offer.port(), offer.token(), task_,
                                             address_, data_sockets_);
  }

  // Takes the data connection, which was refused or broke. One that was
  // refused (not reachable: a firewall, say; or not any more: the task is
  // stopping) leaves large pushes on gRPC until the task offers another, or
  // for a while. One that broke is replaced at the task's next offer.
  std::shared_ptr<DataConnection> TakeEndedConnection()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(data_mu_) {
    if (data_->state() == DataConnection::State::kRefused) {
      if (refused_token_ != data_token_) {  // once per offer
        DF_LOG(Warning) << "task " << task_ << " at " << address_
                        << " offered a data connection, but it cannot be "
                           "opened ("
                        << data_->failure()
                        << "); pushing large tensors over gRPC";
      }
      refused_token_ = data_token_;
      refused_at_ = SteadyNow();
    }
    return std::move(data_);
  }

  // Offers the tensor by the same-host path: the receiver copies it out of
  // this process's memory, so the tensor stays referenced (and, being shared,
  // unchanged: variables copy on write) until the call ends. A receiver that
  // cannot read it says why; the tensor then goes over the connection, and so
  // does every later one to that task.
  // Offers the tensor by the same-host path (on the data connection if there
  // is one, else over gRPC): the receiver maps or copies it out of this
  // process's memory, so the tensor stays referenced (and, being shared,
  // unchanged: variables copy on write) until the call ends. A receiver that
  // cannot read it says why; the tensor's bytes then go over the connection,
  // and so do those of every later one to that task.
  void PushSameHost(int64_t step_id, const std::string& key,
                    const Tensor& value, StatusCallback done) {
    auto pinned = std::make_shared<const Tensor>(value);
    PushDone answered = [this, step_id, key, pinned, done = std::move(done)](
                            const absl::Status& s,
                            const proto::PushTensorResponse& response) mutable {
      if (response.has_data_connection()) {
        TakeDataConnectionOffer(response.data_connection());
      }
      if (!s.ok()) {
        done(s);
      } else if (response.same_host_refused().empty()) {
        done(absl::OkStatus());
      } else {
        if (!same_host_refused_.exchange(true)) {
          DF_LOG(Warning) << "task " << task_ << " at " << address_
                          << " cannot take tensors by the same-host path ("
                          << response.same_host_refused()
                          << "); pushing them over TCP from now on";
        }
        PushBytes(step_id, key, *pinned, std::move(done));
      }
    };
    const SameHostOffer offer = OfferSameHost(step_id, key, value);
    if (std::shared_ptr<DataConnection> data = ReadyDataConnection()) {
      // (A call that is not sent leaves `answered` as it was.)
      if (data->Offer(offer.header, offer.keepalive,
                      absl::Milliseconds(deadlines_.step_ms),
                      std::move(answered))) {
        return;
      }
    }
    Push(EncodeSameHostPush(offer), /*whole=*/true, std::move(answered),
         offer.keepalive);
  }

  std::shared_ptr<grpc::ClientContext> StartTracked(int64_t deadline_ms,
                                                    uint64_t* id) {
    auto ctx = std::make_shared<grpc::ClientContext>();
    ctx->set_deadline(DeadlineAfterMs(deadline_ms));
    absl::MutexLock lock(&tracked_mu_);
    *id = next_tracked_id_++;
    tracked_.emplace(*id, ctx);
    if (closing_) ctx->TryCancel();  // the call fails as soon as it starts
    return ctx;
  }
  void EndTracked(uint64_t id) {
    absl::MutexLock lock(&tracked_mu_);
    tracked_.erase(id);
  }
  // The queue of this worker's calls: the server's, or (without one) its own.
  std::unique_ptr<CompletionQueueThreads> owned_threads_;
  CompletionQueueThreads* const threads_;
  std::unique_ptr<proto::WorkerService::Stub> stub_;
  grpc::GenericStub generic_;
  const std::string task_;
  const std::string address_;
  const RpcDeadlines deadlines_;
  // Whether to offer large tensors by the same-host path, and whether the
  // peer refused it once (then never again: it is on another host, or reads
  // between the processes are not permitted).
  const bool same_host_;
  std::atomic<bool> same_host_refused_{false};
  // Whether to push large tensors on a data connection once the task offers
  // one; the connection and its token; the token of the last one that could
  // not be opened, and when (it is not tried again for a while, and is
  // reported once); and whether this worker is being destroyed.
  const bool data_connection_;
  const int data_sockets_;
  absl::Mutex data_mu_;
  // (Shared with pushes in progress, which write outside the lock.)
  std::shared_ptr<DataConnection> data_ ABSL_GUARDED_BY(data_mu_);
  uint64_t data_token_ ABSL_GUARDED_BY(data_mu_) = 0;
  uint64_t refused_token_ ABSL_GUARDED_BY(data_mu_) = 0;
  // When the task last refused a data connection (none yet: nullopt).
  std::optional<SteadyTime> refused_at_ ABSL_GUARDED_BY(data_mu_);
  bool data_closed_ ABSL_GUARDED_BY(data_mu_) = false;
  // The streams that RunGraph and PushTensor calls to this task go on
  // (stream_mu_ guards each slot but its atomic `unimplemented`).
  absl::Mutex stream_mu_;
  StreamSlot<RunGraphCalls> run_graph_stream_ ABSL_GUARDED_BY(stream_mu_);
  StreamSlot<PushCalls> push_stream_ ABSL_GUARDED_BY(stream_mu_);
  bool streams_closed_ ABSL_GUARDED_BY(stream_mu_) = false;
  absl::Mutex tracked_mu_;
  absl::flat_hash_map<uint64_t, std::shared_ptr<grpc::ClientContext>> tracked_
      ABSL_GUARDED_BY(tracked_mu_);
  uint64_t next_tracked_id_ ABSL_GUARDED_BY(tracked_mu_) = 0;
  bool closing_ ABSL_GUARDED_BY(tracked_mu_) = false;
};

}  // namespace

std::unique_ptr<WorkerInterface> NewGrpcRemoteWorker(
    std::shared_ptr<grpc::Channel> channel, const std::string& task,
    const std::string& address, const RpcDeadlines& deadlines,
    const PushPaths& paths, CompletionQueueThreads* threads) {
  return std::make_unique<GrpcRemoteWorker>(std::move(channel), task, address,
                                            deadlines, paths, threads);
}

}  // namespace distflow
