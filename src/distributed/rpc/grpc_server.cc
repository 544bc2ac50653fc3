#include "distributed/rpc/grpc_server.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/mutex_checks.h"
#include "base/shared_arena.h"
#include "base/step_trace.h"
#include "distributed/local_master.h"
#include "distributed/rpc/data_socket.h"
#include "distributed/rpc/grpc_master_service.h"
#include "distributed/rpc/grpc_master_stream_service.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/grpc_worker_service.h"
#include "distributed/rpc/local_socket.h"
#include "distributed/rpc/same_host.h"
#include "distributed/rpc/tensor_wire.h"
#include "grpcpp/resource_quota.h"
#include "proto/worker.grpc.pb.h"

namespace distflow {
namespace {

int ThreadsOr(int requested) {
  return requested > 0 ? requested : ThreadPool::HardwareThreads();
}

// Master calls block while their step runs; a few run at once.
constexpr int kMasterThreads = 8;
// Threads that poll the task's connections and run the handlers of calls
// (small steps and tensor pushes included) and of replies: one, and a
// standby thread for handlers that take long (see CompletionQueueThreads).
constexpr int kRpcThreads = 1;
// How long Stop lets in-flight calls finish before cancelling them.
constexpr int kShutdownGraceMs = 2000;
// Idle receive buffers a task keeps for reuse: a few steps' worth of large
// tensors.
constexpr size_t kMaxIdleRecvBytes = size_t{1} << 30;

bool SplitAddress(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  *host = address.substr(0, colon);
  return absl::SimpleAtoi(address.substr(colon + 1), port) && *port >= 0 &&
         *port <= 65535;
}

// How long tensors pushed here for a step wait for the step's RunGraph. The
// master starts every RunGraph of a step, each with the step deadline, as the
// step begins and before any partition can push; the slack covers the time
// it takes to start them all.
absl::Duration UnclaimedStepTimeout(int64_t step_ms, int64_t pending_ms) {
  const absl::Duration step = absl::Milliseconds(step_ms);
  const absl::Duration longest = step + std::min(step, absl::Minutes(1));
  return pending_ms > 0 ? std::min(longest, absl::Milliseconds(pending_ms))
                        : longest;
}

// The largest message the task takes: the option, but room for a push's
// chunk and its header whatever it says.
int MaxMessageBytes(int64_t option) {
  return static_cast<int>(std::clamp<int64_t>(
      option, 2 * kDefaultPushChunkBytes, std::numeric_limits<int>::max()));
}

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "[::1]";
}

}  // namespace

ThreadPool::IdleWait IdleWaitOfTask(const ServerOptions& options,
                                    const ClusterMap& cluster,
                                    const std::string& job_name,
                                    int task_index) {
  switch (options.idle_threads) {
    case ServerOptions::IdleThreads::kPoll:
      return ThreadPool::IdleWait::kSpinThenSleep;
    case ServerOptions::IdleThreads::kSleep:
      return ThreadPool::IdleWait::kSleep;
    case ServerOptions::IdleThreads::kAuto:
      break;
  }
  // Two loopback names are one host; otherwise hosts are compared as
  // written (a host named two ways counts as two, and its tasks poll).
  auto host_of = [](const std::string& address) {
    const std::string host = HostOfAddress(address);
    return IsLoopback(host) || host == "::1" ? std::string("localhost") : host;
  };
  const std::string& own = cluster.at(job_name).at(task_index);
  const std::string host = host_of(own);
  for (const auto& [job, addresses] : cluster) {
    for (size_t i = 0; i < addresses.size(); ++i) {
      if (job == job_name && static_cast<int>(i) == task_index) continue;
      if (host_of(addresses[i]) == host) return ThreadPool::IdleWait::kSleep;
    }
  }
  return ThreadPool::IdleWait::kSpinThenSleep;
}

GrpcServer::GrpcServer(ClusterMap cluster, std::string job_name, int task_index,
                       const ServerOptions& options)
    : job_name_(std::move(job_name)),
      task_index_(task_index),
      task_name_(TaskName(job_name_, task_index)),
      options_(options),
      idle_wait_(IdleWaitOfTask(options, cluster, job_name_, task_index)),
      inter_op_pool_("inter_op", ThreadsOr(options.inter_op_threads),
                     idle_wait_),
      intra_op_pool_("intra_op", ThreadsOr(options.intra_op_threads),
                     idle_wait_),
      master_pool_("master", kMasterThreads, idle_wait_),
      cluster_(std::move(cluster)) {}

absl::StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::Create(
    ClusterMap cluster, const std::string& job_name, int task_index,
    const ServerOptions& options) {
  // A task runs steps for as long as the job lasts: it should not pay for
  // abseil's lock-order bookkeeping on every lock (see mutex_checks.h).
  DisableMutexDeadlockDetection();
  auto job = cluster.find(job_name);
  if (job == cluster.end() || task_index < 0 ||
      task_index >= static_cast<int>(job->second.size())) {
    std::string jobs;
    for (const auto& [name, tasks] : cluster) {
      absl::StrAppend(&jobs, jobs.empty() ? "" : ", ", name, " (", tasks.size(),
                      " tasks)");
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot start a server for task ", task_index, " of job '", job_name,
        "': the cluster has no such task; its jobs are: ",
        jobs.empty() ? "none" : jobs));
  }
  std::unique_ptr<GrpcServer> server(
      new GrpcServer(std::move(cluster), job_name, task_index, options));
  absl::Status s = server->Start();
  if (!s.ok()) return s;
  return server;
}

absl::Status GrpcServer::Start() {
  std::string address;
  {
    absl::MutexLock lock(&mu_);
    address = cluster_[job_name_][task_index_];
  }
  if (!SplitAddress(address, &host_, &port_)) {
    return absl::InvalidArgumentError(
        absl::StrCat("task ", task_name_, " has a malformed address '", address,
                     "'; expected host:port"));
  }
  // Listen on every interface unless the cluster names a loopback address
  // (tests stay off the network).
  const std::string listen_host = IsLoopback(host_) ? host_ : "0.0.0.0";
  // Tasks of this host reach this one over a Unix socket named after its
  // address, which needs the port before listening: a task started on port
  // 0 reserves one first (on a host name it cannot, and goes without).
  const bool local_socket = options_.local_socket && LocalSocketAllowedByEnv();
  std::unique_ptr<PortReservation> reservation;
  if (local_socket && port_ == 0) {
    auto reserved = PortReservation::Create(listen_host);
    if (reserved.ok()) {
      reservation = *std::move(reserved);
      port_ = reservation->port();
    }
  }
  const std::string listen = absl::StrCat(listen_host, ":", port_);
  grpc::ServerBuilder builder;
  ConfigureServerBuilder(&builder);
  // No peer may make the task take a message of gigabytes, nor gRPC buffer
  // without bound (the quota makes it shrink its windows instead).
  const int max_message = MaxMessageBytes(options_.max_message_bytes);
  builder.SetMaxReceiveMessageSize(max_message);
  grpc::ResourceQuota quota(absl::StrCat("distflow task ", task_name_));
  quota.Resize(std::max<size_t>(size_t{1} << 30, size_t{8} * max_message));
  builder.SetResourceQuota(quota);
  int bound = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &bound);
  std::string socket;
  if (local_socket && port_ != 0) {
    socket = LocalSocketTarget(absl::StrCat(host_, ":", port_));
    builder.AddListeningPort(socket, grpc::InsecureServerCredentials());
  }
  // One queue for the calls this task serves and those it makes.
  cq_ = builder.AddCompletionQueue();
  rpc_threads_ =
      std::make_unique<CompletionQueueThreads>("rpc", cq_.get(), kRpcThreads);

  RpcDeadlines deadlines;
  deadlines.control_ms = options_.rpc_timeout_ms;
  deadlines.step_ms = options_.step_timeout_ms;
  // Tensors between tasks of this host skip TCP unless turned off (by the
  // option, or by the environment for a whole job).
  const bool same_host =
      options_.same_host_transport && SameHostTransportAllowedByEnv();
  if (same_host && SharedTensorsAllowedByEnv()) {
    // Large tensors made from now on go where tasks of this host can map
    // them. Without an arena they stay on the heap and are copied.
    const absl::Status arena = SharedArena::Enable();
    if (!arena.ok()) {
      DF_LOG(Warning) << "tensors to tasks of this host will be copied: "
                      << arena.message();
    }
  }
  PushPaths paths;
  paths.same_host = same_host;
  paths.data_connection =
      options_.data_connection && DataConnectionAllowedByEnv();
  paths.data_sockets = DataSocketsFromEnv(options_.data_sockets);
  worker_cache_ = std::make_unique<GrpcWorkerCache>(
      cluster(), task_name_, nullptr, deadlines, paths, rpc_threads_.get(),
      local_socket);
  WorkerEnv worker_env;
  worker_env.task_name = task_name_;
  trace::SetProcessName(task_name_);
  worker_env.worker_cache = worker_cache_.get();
  worker_env.inter_op_pool = &inter_op_pool_;
  worker_env.intra_op_pool = &intra_op_pool_;
  worker_env.unclaimed_step_timeout =
      UnclaimedStepTimeout(deadlines.step_ms, options_.pending_push_timeout_ms);
  worker_env.max_pending_push_bytes_per_peer =
      options_.max_pending_push_bytes_per_peer;
  worker_env.max_pending_push_bytes = options_.max_pending_push_bytes;
  worker_env.request_stop = [this](const std::string& reason,
                                   int64_t idle_grace_ms) {
    DF_LOG(Info) << "task " << task_name_ << " asked to stop: " << reason
                 << (idle_grace_ms > 0 ? absl::StrCat(" (once idle for ",
                                                      idle_grace_ms, " ms)")
                                       : "");
    absl::MutexLock lock(&mu_);
    if (idle_grace_ms <= 0) {
      stop_requested_ = true;
    } else if (end_grace_ == absl::InfiniteDuration()) {
      worker_->RefuseNewSteps(reason);
      end_grace_ = absl::Milliseconds(idle_grace_ms);
    }
  };
  worker_ = std::make_unique<Worker>(std::move(worker_env));
  worker_cache_->SetLocalWorker(worker_.get());

  MasterEnv master_env;
  master_env.task_name = task_name_;
  master_env.job_name = job_name_;
  master_env.task_index = task_index_;
  for (const auto& [job, tasks] : cluster()) {
    master_env.jobs[job] = static_cast<int>(tasks.size());
  }
  master_env.worker_cache = worker_cache_.get();
  master_env.remote_session_timeout =
      absl::Milliseconds(options_.remote_session_timeout_ms);
  master_ = std::make_shared<Master>(std::move(master_env));

  recv_pool_ = RecvBufferPool::Create(kMaxIdleRecvBytes);
  WorkerServiceOptions service_options;
  service_options.same_host_reads = same_host;
  service_options.pool = recv_pool_;
  if (paths.data_connection) service_options.data_host = listen_host;
  service_options.task = task_name_;
  service_options.partial_timeout =
      UnclaimedStepTimeout(deadlines.step_ms, options_.pending_push_timeout_ms);
  worker_service_ = NewGrpcWorkerService(worker_.get(), service_options);
  data_listener_ = worker_service_->data_listener();
  master_service_ = NewGrpcMasterService(master_.get(), &master_pool_);
  master_stream_service_ =
      NewGrpcMasterStreamService(master_.get(), &master_pool_);

  builder.RegisterService(worker_service_->service());
  builder.RegisterService(master_service_->service());
  builder.RegisterService(master_stream_service_->service());
  server_ = builder.BuildAndStart();
  reservation.reset();
  if (server_ == nullptr || bound == 0) {
    server_.reset();
    rpc_threads_->Shutdown();
    return absl::UnavailableError(absl::StrCat(
        "task ", task_name_, " cannot listen on ", listen,
        socket.empty() ? "" : absl::StrCat(" and ", socket),
        ": the port is in use or the address is not this machine's; stop "
        "the process that holds it or choose another port",
        socket.empty() ? ""
                       : " (ServerOptions::local_socket = false leaves the "
                         "Unix socket out)"));
  }
  worker_service_->Start(cq_.get(), rpc_threads_.get());
  master_service_->Start(cq_.get(), rpc_threads_.get());
  master_stream_service_->Start(cq_.get(), rpc_threads_.get());
  port_ = bound;
  {
    absl::MutexLock lock(&mu_);
    cluster_[job_name_][task_index_] = absl::StrCat(host_, ":", port_);
  }
  worker_cache_->SetCluster(cluster());
  RegisterLocalMaster(target(), master_);
  return absl::OkStatus();
}

GrpcServer::~GrpcServer() { (void)Stop(); }

std::string GrpcServer::target() const {
  return absl::StrCat("grpc://", host_, ":", port_);
}

ClusterMap GrpcServer::cluster() const {
  absl::MutexLock lock(&mu_);
  return cluster_;
}

void GrpcServer::SetCluster(ClusterMap cluster) {
  {
    absl::MutexLock lock(&mu_);
    cluster_ = cluster;
  }
  worker_cache_->SetCluster(std::move(cluster));
}

absl::Status GrpcServer::Join() {
  {
    absl::MutexLock lock(&mu_);
    auto stop_or_end = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stop_requested_ || end_grace_ != absl::InfiniteDuration();
    };
    mu_.Await(absl::Condition(&stop_or_end));
    // The job is done: let the workers finish their last steps (new ones are
    // refused), and stop once none has run here for the grace period.
    while (!stop_requested_ && !worker_->IdleFor(end_grace_)) {
      mu_.AwaitWithTimeout(absl::Condition(&stop_requested_),
                           absl::Milliseconds(50));
    }
  }
  // A stop requested over RPC is carried out here, off gRPC's threads.
  absl::Status s = Stop();
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&stopped_));
  return s;
}

absl::Status GrpcServer::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_requested_ = true;
    if (stopping_) return absl::OkStatus();
    stopping_ = true;
  }
  if (server_ != nullptr) UnregisterLocalMaster(target());
  // Senders on data connections see them break, as they see gRPC's.
  if (data_listener_ != nullptr) data_listener_->Close();
  if (worker_ != nullptr) {
    worker_->AbortAllSteps(absl::CancelledError(
        absl::StrCat("task ", task_name_, " is stopping")));
  }
  // The calls this task makes end now (a step still running here fails
  // instead of waiting for a task that may be hung), and none starts.
  if (rpc_threads_ != nullptr) rpc_threads_->Close();
  if (server_ != nullptr) {
    server_->Shutdown(DeadlineAfterMs(kShutdownGraceMs));
    server_->Wait();
  }
  // Every call's last event has run: the queue can go.
  if (rpc_threads_ != nullptr) rpc_threads_->Shutdown();
  absl::MutexLock lock(&mu_);
  stopped_ = true;
  return absl::OkStatus();
}

namespace {

absl::Status SendShutdown(const std::string& address, const std::string& reason,
                          int64_t idle_grace_ms, int64_t timeout_ms) {
  auto stub = proto::WorkerService::NewStub(NewChannel(address));
  proto::ShutdownRequest request;
  request.set_reason(reason);
  request.set_idle_grace_ms(idle_grace_ms);
  proto::ShutdownResponse response;
  grpc::ClientContext ctx;
  ctx.set_deadline(DeadlineAfterMs(timeout_ms));
  // Wait for a task that is still starting, up to the deadline.
  ctx.set_wait_for_ready(true);
  return FromGrpcCallStatus(stub->Shutdown(&ctx, request, &response),
                            "(shutdown target)", address, "Shutdown");
}

}  // namespace

absl::Status ShutdownTask(const std::string& address, const std::string& reason,
                          int64_t timeout_ms) {
  return SendShutdown(address, reason, /*idle_grace_ms=*/0, timeout_ms);
}

absl::Status EndJobOnTask(const std::string& address, int64_t idle_grace_ms,
                          int64_t timeout_ms) {
  if (idle_grace_ms <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "EndJobOnTask(", address, "): idle_grace_ms must be positive (got ",
        idle_grace_ms, "); use ShutdownTask to stop a task at once"));
  }
  return SendShutdown(address, "the chief finished training", idle_grace_ms,
                      timeout_ms);
}

absl::Status EndJob(const ClusterSpec& cluster, int64_t idle_grace_ms,
                    int64_t timeout_ms) {
  absl::Status first;
  for (const std::string& ps : cluster.tasks("ps")) {
    first.Update(EndJobOnTask(ps, idle_grace_ms, timeout_ms));
  }
  return first;
}

}  // namespace distflow
