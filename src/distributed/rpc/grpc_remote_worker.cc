#include "distributed/rpc/grpc_remote_worker.h"

#include <atomic>
#include <chrono>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "base/logging.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/same_host.h"
#include "distributed/rpc/tensor_wire.h"
#include "grpcpp/generic/generic_stub.h"
#include "proto/worker.grpc.pb.h"

namespace distflow {
namespace {

constexpr char kPushTensorMethod[] = "/distflow.proto.WorkerService/PushTensor";

class GrpcRemoteWorker : public WorkerInterface {
 public:
  GrpcRemoteWorker(std::shared_ptr<grpc::Channel> channel, std::string task,
                   std::string address, RpcDeadlines deadlines, bool same_host)
      : stub_(proto::WorkerService::NewStub(channel)),
        generic_(channel),
        task_(std::move(task)),
        address_(std::move(address)),
        deadlines_(deadlines),
        same_host_(same_host && !SameHostIdentity().empty()) {}

  void GetStatusAsync(const proto::GetStatusRequest* request,
                      proto::GetStatusResponse* response,
                      StatusCallback done) override {
    Call(deadlines_.control_ms, "GetStatus", std::move(done),
         [&](grpc::ClientContext* ctx, Callback callback) {
           stub_->async()->GetStatus(ctx, request, response,
                                     std::move(callback));
         });
  }
  void RegisterGraphAsync(const proto::RegisterGraphRequest* request,
                          proto::RegisterGraphResponse* response,
                          StatusCallback done) override {
    Call(deadlines_.control_ms, "RegisterGraph", std::move(done),
         [&](grpc::ClientContext* ctx, Callback callback) {
           stub_->async()->RegisterGraph(ctx, request, response,
                                         std::move(callback));
         });
  }
  void DeregisterGraphAsync(const proto::DeregisterGraphRequest* request,
                            proto::DeregisterGraphResponse* response,
                            StatusCallback done) override {
    Call(deadlines_.control_ms, "DeregisterGraph", std::move(done),
         [&](grpc::ClientContext* ctx, Callback callback) {
           stub_->async()->DeregisterGraph(ctx, request, response,
                                           std::move(callback));
         });
  }
  void RunGraphAsync(const proto::RunGraphRequest* request,
                     proto::RunGraphResponse* response,
                     StatusCallback done) override {
    Call(deadlines_.step_ms, "RunGraph", std::move(done),
         [&](grpc::ClientContext* ctx, Callback callback) {
           stub_->async()->RunGraph(ctx, request, response,
                                    std::move(callback));
         });
  }
  absl::Status RunGraphWithTensors(const proto::RunGraphRequest* request,
                                   std::vector<Tensor> feeds,
                                   std::vector<Tensor>* fetches) override {
    // A blocking call: gRPC reads the reply on this thread, where the
    // callback form would read it on one of its own and wake this one.
    proto::RunGraphRequest with_feeds;
    if (!feeds.empty()) {
      with_feeds = *request;
      AddRunGraphFeeds(feeds, &with_feeds);
      request = &with_feeds;
    }
    proto::RunGraphResponse response;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::milliseconds(deadlines_.step_ms));
    absl::Status s =
        FromGrpcCallStatus(stub_->RunGraph(&ctx, *request, &response), task_,
                           address_, "RunGraph");
    if (!s.ok()) return s;
    return DecodeRunGraphFetches(response, request->num_fetches(), fetches);
  }
  void AbortStepAsync(const proto::AbortStepRequest* request,
                      proto::AbortStepResponse* response,
                      StatusCallback done) override {
    Call(deadlines_.control_ms, "AbortStep", std::move(done),
         [&](grpc::ClientContext* ctx, Callback callback) {
           // An abort after a failed push waits for the receiver to be
           // reachable again (see AbortStepRequest.wait_for_ready).
           ctx->set_wait_for_ready(request->wait_for_ready());
           stub_->async()->AbortStep(ctx, request, response,
                                     std::move(callback));
         });
  }
  void ShutdownAsync(const proto::ShutdownRequest* request,
                     proto::ShutdownResponse* response,
                     StatusCallback done) override {
    Call(deadlines_.control_ms, "Shutdown", std::move(done),
         [&](grpc::ClientContext* ctx, Callback callback) {
           stub_->async()->Shutdown(ctx, request, response,
                                    std::move(callback));
         });
  }

  void PushTensorAsync(int64_t step_id, const std::string& key,
                       const Tensor& value, StatusCallback done) override {
    if (same_host_ && !same_host_refused_.load(std::memory_order_relaxed) &&
        DataTypeSize(value.dtype()) != 0 &&
        static_cast<int64_t>(value.TotalBytes()) >= kMinSameHostBytes) {
      PushSameHost(step_id, key, value, std::move(done));
    } else {
      PushOverConnection(step_id, key, value, std::move(done));
    }
  }

  // Calls may still be in flight when this is destroyed (a send completes
  // before its push is acknowledged; a server stops while its master's calls
  // to a hung task wait), and their callbacks use this object: cancel them
  // and wait for the callbacks.
  ~GrpcRemoteWorker() override {
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
  using Callback = std::function<void(grpc::Status)>;

  // Starts a unary call with `start`, tracked (see the destructor); `done`
  // gets its status, naming this task where the transport failed.
  template <typename StartFn>
  void Call(int64_t deadline_ms, const char* method, StatusCallback done,
            StartFn start) {
    uint64_t id = 0;
    std::shared_ptr<grpc::ClientContext> ctx = StartTracked(deadline_ms, &id);
    grpc::ClientContext* raw = ctx.get();
    start(raw, [this, ctx = std::move(ctx), id, method,
                done = std::move(done)](grpc::Status s) mutable {
      done(FromGrpcCallStatus(s, task_, address_, method));
      ctx.reset();     // see PushOverConnection
      EndTracked(id);  // the last use of this object
    });
  }

  // Sends the tensor's bytes over the connection, in chunks.
  void PushOverConnection(int64_t step_id, const std::string& key,
                          const Tensor& value, StatusCallback done) {
    // Every chunk goes at once (they share the tensor's buffer); the push is
    // done when the last is acknowledged, with the first error if any.
    struct State {
      std::vector<grpc::ByteBuffer> requests;
      std::vector<grpc::ByteBuffer> responses;
      std::vector<std::shared_ptr<grpc::ClientContext>> contexts;
      std::vector<uint64_t> ids;
      std::atomic<int> pending{0};
      absl::Mutex mu;
      absl::Status status;
      StatusCallback done;
    };
    auto state = std::make_shared<State>();
    state->requests = EncodePushTensor(step_id, key, value);
    const size_t n = state->requests.size();
    state->responses.resize(n);
    state->pending = static_cast<int>(n);
    state->done = std::move(done);
    state->ids.resize(n);
    for (size_t i = 0; i < n; ++i) {
      state->contexts.push_back(
          StartTracked(deadlines_.step_ms, &state->ids[i]));
    }
    for (size_t i = 0; i < n; ++i) {
      generic_.UnaryCall(
          state->contexts[i].get(), kPushTensorMethod, grpc::StubOptions(),
          &state->requests[i], &state->responses[i],
          [this, state, i](grpc::Status s) {
            if (!s.ok()) {
              absl::MutexLock lock(&state->mu);
              if (state->status.ok()) {
                state->status =
                    FromGrpcCallStatus(s, task_, address_, "PushTensor");
              }
            }
            if (state->pending.fetch_sub(1) == 1) {
              absl::Status result;
              {
                absl::MutexLock lock(&state->mu);
                result = state->status;
              }
              state->done(result);
            }
            // The context goes here, not with the callback: gRPC destroys
            // the callback while it tears the call down, and a context
            // destroyed then releases the call a second time.
            state->contexts[i].reset();
            EndTracked(state->ids[i]);  // the last use of this
          });
    }
  }

  // Offers the tensor by the same-host path: the receiver copies it out of
  // this process's memory, so the tensor stays referenced (and, being shared,
  // unchanged: variables copy on write) until the call ends. A receiver that
  // cannot read it says why; the tensor then goes over the connection, and so
  // does every later one to that task.
  void PushSameHost(int64_t step_id, const std::string& key,
                    const Tensor& value, StatusCallback done) {
    struct State {
      grpc::ByteBuffer request;
      grpc::ByteBuffer response;
      Tensor pinned;
      std::shared_ptr<grpc::ClientContext> context;
      uint64_t id = 0;
      StatusCallback done;
    };
    auto state = std::make_shared<State>();
    state->request = EncodeSameHostPush(step_id, key, value);
    state->pinned = value;
    state->done = std::move(done);
    state->context = StartTracked(deadlines_.step_ms, &state->id);
    generic_.UnaryCall(
        state->context.get(), kPushTensorMethod, grpc::StubOptions(),
        &state->request, &state->response,
        [this, state, step_id, key](grpc::Status s) {
          proto::PushTensorResponse response;
          if (s.ok() && !ParseResponse(state->response, &response)) {
            s = grpc::Status(grpc::StatusCode::INTERNAL,
                             "unreadable PushTensor response");
          }
          if (!s.ok()) {
            state->done(FromGrpcCallStatus(s, task_, address_, "PushTensor"));
          } else if (response.same_host_refused().empty()) {
            state->done(absl::OkStatus());
          } else {
            if (!same_host_refused_.exchange(true)) {
              DF_LOG(Warning) << "task " << task_ << " at " << address_
                              << " cannot take tensors by the same-host path ("
                              << response.same_host_refused()
                              << "); pushing them over TCP from now on";
            }
            PushOverConnection(step_id, key, state->pinned,
                               std::move(state->done));
          }
          state->pinned = Tensor();
          state->context.reset();  // as in PushOverConnection
          EndTracked(state->id);   // the last use of this
        });
  }

  static bool ParseResponse(const grpc::ByteBuffer& buffer,
                            proto::PushTensorResponse* response) {
    std::vector<grpc::Slice> slices;
    if (!buffer.Dump(&slices).ok()) return false;
    std::string bytes;
    for (const grpc::Slice& slice : slices) {
      bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
    }
    return response->ParseFromString(bytes);
  }

  std::shared_ptr<grpc::ClientContext> StartTracked(int64_t deadline_ms,
                                                    uint64_t* id) {
    auto ctx = std::make_shared<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(deadline_ms));
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
  absl::Mutex tracked_mu_;
  absl::flat_hash_map<uint64_t, std::shared_ptr<grpc::ClientContext>> tracked_
      ABSL_GUARDED_BY(tracked_mu_);
  uint64_t next_tracked_id_ ABSL_GUARDED_BY(tracked_mu_) = 0;
  bool closing_ ABSL_GUARDED_BY(tracked_mu_) = false;
};

}  // namespace

std::unique_ptr<WorkerInterface> NewGrpcRemoteWorker(
    std::shared_ptr<grpc::Channel> channel, const std::string& task,
    const std::string& address, const RpcDeadlines& deadlines, bool same_host) {
  return std::make_unique<GrpcRemoteWorker>(std::move(channel), task, address,
                                            deadlines, same_host);
}

}  // namespace distflow
