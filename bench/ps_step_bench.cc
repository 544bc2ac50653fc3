// Parameter-server steps per second, against PyTorch's RPC (TensorPipe) doing
// the same pulls and pushes between two processes on 127.0.0.1:
//  - pull/push: read a 4 MiB variable from the ps task, add 1 on the worker,
//    write it back;
//  - tiny: increment a scalar on the ps (one round trip).
// Prints steps/s of each and the ratio distflow / PyTorch. Each runs twice:
// with its same-host path (tensors copied straight between the processes:
// distflow's, and TensorPipe's cross-memory attach) and held to TCP, as
// between two hosts; each path is compared with the same path of the peer.
// The four runs take turns for three rounds (more when the host steals CPU
// time), and each figure is the best of its rounds.
// Bare unary gRPC calls are printed for comparison: WorkerService.GetStatus
// (which does no work) from the worker's process to the ps's server, the same
// two processes with the same servers and channel settings; and the same calls
// to a bare server on gRPC's completion-queue API (one polling thread that
// answers each call itself) from a process without a server. They were the
// tiny step's floor until its RunGraph went on a stream that stays open
// between steps (src/distributed/rpc/run_graph_stream.h), which skips a unary
// call's setup; DISTFLOW_RUN_GRAPH_STREAM=0 measures the unary RunGraph
// instead.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "bench_util.h"
#include "distflow/distflow.h"
#include "distributed/rpc/grpc_server.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/local_socket.h"
#include "nlohmann/json.hpp"
#include "proto/worker.grpc.pb.h"

namespace df = distflow;

namespace {

constexpr int kSteps = 300;
// Rounds of the four pull-and-push measurements (see main).
constexpr int kMeasurementRounds = 3;

struct Rates {
  double pull_push = 0;
  double tiny = 0;
  // distflow's runs only: the tiny step's floor with distflow's servers, and
  // with a completion-queue server.
  double bare_rpc = 0;
  double bare_cq_rpc = 0;
  // Median times of one call, in microseconds.
  double tiny_p50_us = 0;
  double bare_rpc_p50_us = 0;
  double bare_cq_rpc_p50_us = 0;
};

absl::Status RunWithRetry(df::ClientSession* session, df::Operation op) {
  absl::Status s;
  for (int attempt = 0; attempt < 100; ++attempt) {
    s = session->RunTargets({op});
    if (!absl::IsUnavailable(s)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return s;
}

// A blocking GetStatus call to the worker service at `address` (the kind of
// call the master's thread makes for the tiny step's RunGraph), on the
// task's Unix socket where it has one, as tasks call each other.
std::function<absl::Status()> BareCall(const std::string& address) {
  const bool unix_socket =
      df::LocalSocketAllowedByEnv() && df::LocalSocketListening(address);
  std::shared_ptr<df::proto::WorkerService::Stub> stub =
      df::proto::WorkerService::NewStub(df::NewChannel(
          unix_socket ? df::LocalSocketTarget(address) : address));
  return [stub, address]() {
    df::proto::GetStatusRequest request;
    df::proto::GetStatusResponse response;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    ctx.set_wait_for_ready(true);  // the server may still be starting
    grpc::Status s = stub->GetStatus(&ctx, request, &response);
    if (s.ok()) return absl::OkStatus();
    return absl::UnavailableError(
        absl::StrCat("GetStatus on ", address, ": ", s.error_message()));
  };
}

struct Timing {
  double per_second = 0;  // median over the rounds
  double p50_us = 0;      // median time of one call, over all calls
};

// Times each of `fns` over kRounds rounds of `calls` calls each, the
// functions taking turns round by round so that they see the same load on
// this shared machine. The median call time moves less with the load than
// the rate, which counts every delay of a busy core.
absl::StatusOr<std::vector<Timing>> TimeInRounds(
    int calls, const std::vector<std::function<absl::Status()>>& fns) {
  constexpr int kRounds = 9;
  std::vector<std::vector<double>> rates(fns.size());
  std::vector<std::vector<double>> times(fns.size());
  for (const auto& fn : fns) {
    for (int i = 0; i < 50; ++i) DF_RETURN_IF_ERROR(fn());  // warm-up
  }
  for (int round = 0; round < kRounds; ++round) {
    for (size_t f = 0; f < fns.size(); ++f) {
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < calls; ++i) {
        auto call_start = std::chrono::steady_clock::now();
        DF_RETURN_IF_ERROR(fns[f]());
        times[f].push_back(bench::Seconds(call_start) * 1e6);
      }
      rates[f].push_back(calls / bench::Seconds(start));
    }
  }
  auto median = [](std::vector<double>* v) {
    std::sort(v->begin(), v->end());
    return (*v)[v->size() / 2];
  };
  std::vector<Timing> timings;
  for (size_t f = 0; f < fns.size(); ++f) {
    timings.push_back({median(&rates[f]), median(&times[f])});
  }
  return timings;
}

// `ps_address` is the ps task's, for the bare calls.
absl::StatusOr<Rates> MeasureDistflow(const std::string& target,
                                      const std::string& ps_address) {
  df::Scope root = df::Scope::NewRootScope();
  df::Scope ps = root.WithDevice("/job:ps/task:0");
  df::Scope worker = root.WithDevice("/job:worker/task:0");
  df::ops::Variable param(
      ps.WithOpName("param"),
      df::ops::Fill(ps, df::Tensor::Vector<int32_t>({1 << 20}), 0.0f));
  df::Output pulled = df::ops::Identity(worker, param);
  df::Output updated = df::ops::Add(worker, pulled, 1.0f);
  df::Output push = df::ops::Assign(ps.WithOpName("push"), param, updated);
  df::ops::Variable counter(ps.WithOpName("counter"),
                            df::Tensor::Scalar<float>(0));
  df::Output tick = df::ops::AssignAdd(ps.WithOpName("tick"), counter, 1.0f);
  df::Operation init = df::ops::GlobalVariablesInitializer(root);
  df::SessionOptions options;
  options.target = target;
  auto session = df::ClientSession::Create(root, options);
  if (!session.ok()) return session.status();
  if (absl::Status s = RunWithRetry(session->get(), init); !s.ok()) return s;

  Rates rates;
  for (int i = 0; i < 5; ++i) (void)(*session)->RunTargets({push.op()});
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kSteps; ++i) {
    if (absl::Status s = (*session)->RunTargets({push.op()}); !s.ok()) return s;
  }
  rates.pull_push = kSteps / bench::Seconds(start);
  df::ClientSession* client = session->get();
  auto tiny = [client, &tick] { return client->RunTargets({tick.op()}); };
  DF_ASSIGN_OR_RETURN(std::vector<Timing> tiny_and_bare,
                      TimeInRounds(kSteps, {tiny, BareCall(ps_address)}));
  rates.tiny = tiny_and_bare[0].per_second;
  rates.tiny_p50_us = tiny_and_bare[0].p50_us;
  rates.bare_rpc = tiny_and_bare[1].per_second;
  rates.bare_rpc_p50_us = tiny_and_bare[1].p50_us;
  // The pulls and pushes must have happened: param holds the step count.
  auto check = (*session)->Run(
      {df::ops::Slice(worker, param, df::Tensor::Vector<int32_t>({0}),
                      df::Tensor::Vector<int32_t>({1}))});
  if (!check.ok()) return check.status();
  if (check->at(0).flat<float>()[0] != kSteps + 5) {
    return absl::InternalError("the ps's parameter missed updates");
  }
  return rates;
}

// Answers WorkerService.GetStatus alone, on gRPC's completion-queue API:
// one thread polls the queue and answers each call itself. Runs until killed.
int ServeCompletionQueueEcho(const std::string& address) {
  df::proto::WorkerService::AsyncService service;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<grpc::ServerCompletionQueue> cq =
      builder.AddCompletionQueue();
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) return 1;
  struct Call {
    grpc::ServerContext ctx;
    df::proto::GetStatusRequest request;
    df::proto::GetStatusResponse response;
    grpc::ServerAsyncResponseWriter<df::proto::GetStatusResponse> writer{&ctx};
    bool answered = false;
  };
  auto await_call = [&service, &cq] {
    auto* call = new Call;
    service.RequestGetStatus(&call->ctx, &call->request, &call->writer,
                             cq.get(), cq.get(), call);
  };
  await_call();
  void* tag = nullptr;
  bool ok = false;
  while (cq->Next(&tag, &ok)) {
    auto* call = static_cast<Call*>(tag);
    if (ok && !call->answered) {
      await_call();
      call->answered = true;
      call->writer.Finish(call->response, grpc::Status::OK, call);
    } else {
      delete call;
    }
  }
  return 0;
}

// PyTorch's RPC with its own choice of transport (on one host, tensors cross
// by cross-memory attach), or held to TCP (`tcp_only`), as between hosts.
absl::StatusOr<Rates> MeasureTorch(bool tcp_only) {
  const std::string command = absl::StrCat(
      "OPENBLAS_NUM_THREADS=1 /usr/bin/python3 ", DISTFLOW_BENCH_DIR,
      "/torch_rpc_peer.py ", bench::PickFreePort(), " ", kSteps,
      tcp_only ? " tcp" : "", " 2>/dev/null");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return absl::UnavailableError("cannot start python3");
  std::string output;
  char buffer[4096];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  auto json =
      nlohmann::json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (status != 0 || json.is_discarded()) {
    return absl::UnavailableError(absl::StrCat(
        "the PyTorch peer failed (status ", status, "): ", output));
  }
  Rates rates;
  rates.pull_push = json["pull_push_steps_per_sec"].get<double>();
  rates.tiny = json["tiny_steps_per_sec"].get<double>();
  return rates;
}

absl::StatusOr<Rates> MeasureDistflowTasks(bool same_host) {
  const std::string ps_address =
      absl::StrCat("127.0.0.1:", bench::PickFreePort());
  const std::string worker_address =
      absl::StrCat("127.0.0.1:", bench::PickFreePort());
  bench::Child ps({"/proc/self/exe", "--ps", ps_address, worker_address,
                   same_host ? "1" : "0"});
  df::ServerOptions options;
  options.same_host_transport = same_host;
  auto worker = df::GrpcServer::Create(
      {{"ps", {ps_address}}, {"worker", {worker_address}}}, "worker", 0,
      options);
  if (!worker.ok()) return worker.status();
  return MeasureDistflow((*worker)->target(), ps_address);
}

// Prints the error of the first measurement that failed; true if none did.
template <typename T>
bool AllOk(std::initializer_list<const absl::StatusOr<T>*> measured) {
  for (const absl::StatusOr<T>* m : measured) {
    if (!m->ok()) {
      std::cerr << "error: " << m->status() << "\n";
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "--ps") {
    df::ClusterMap cluster = {{"ps", {argv[2]}}, {"worker", {argv[3]}}};
    df::ServerOptions options;
    options.same_host_transport = std::string(argv[4]) == "1";
    auto server = df::GrpcServer::Create(cluster, "ps", 0, options).value();
    return server->Join().ok() ? 0 : 1;
  }
  if (argc == 3 && std::string(argv[1]) == "--cq-echo") {
    return ServeCompletionQueueEcho(argv[2]);
  }
  // Rounds of the four measurements in turn (distflow on each path, then
  // PyTorch on each), keeping each one's best: a burst of load then costs one
  // round of one side, not the ratio. A round in which the host stole CPU
  // time counts only if none was quiet, and up to
  // bench::kExtraRoundsForSteal more rounds look for quiet ones.
  struct Best {
    double fast_pull_push = 0, slow_pull_push = 0;
    double torch_pull_push = 0, torch_tcp_pull_push = 0, torch_tiny = 0;
    // distflow's same-host run with the fastest tiny step, whose call times
    // and bare calls are printed with it.
    Rates tiny_run;
  };
  bench::QuietRounds<Best> rounds(kMeasurementRounds);
  const bench::StealMeter steal;
  for (int round = 1; rounds.WantsAnother(); ++round) {
    const bench::StealMeter round_steal;
    auto fast = MeasureDistflowTasks(/*same_host=*/true);
    auto slow = MeasureDistflowTasks(/*same_host=*/false);
    auto torch = MeasureTorch(/*tcp_only=*/false);
    auto torch_tcp = MeasureTorch(/*tcp_only=*/true);
    if (!AllOk({&fast, &slow, &torch, &torch_tcp})) return 1;
    const double stolen = round_steal.Share();
    std::printf(
        "round %d, %.0f%% stolen: pull+push same-host %.1f / %.1f, TCP %.1f / "
        "%.1f; tiny %.1f / %.1f steps/s (distflow / PyTorch)\n",
        round, 100 * stolen, fast->pull_push, torch->pull_push, slow->pull_push,
        torch_tcp->pull_push, fast->tiny, torch->tiny);
    std::fflush(stdout);
    rounds.Record(stolen, [&](Best* best) {
      best->fast_pull_push = std::max(best->fast_pull_push, fast->pull_push);
      best->slow_pull_push = std::max(best->slow_pull_push, slow->pull_push);
      best->torch_pull_push = std::max(best->torch_pull_push, torch->pull_push);
      best->torch_tcp_pull_push =
          std::max(best->torch_tcp_pull_push, torch_tcp->pull_push);
      best->torch_tiny = std::max(best->torch_tiny, torch->tiny);
      if (fast->tiny > best->tiny_run.tiny) best->tiny_run = *fast;
    });
  }
  const Best& best = rounds.best();
  Rates dist = best.tiny_run;
  {
    const std::string address =
        absl::StrCat("127.0.0.1:", bench::PickFreePort());
    bench::Child echo({"/proc/self/exe", "--cq-echo", address});
    auto bare = TimeInRounds(kSteps, {BareCall(address)});
    if (!AllOk({&bare})) return 1;
    dist.bare_cq_rpc = (*bare)[0].per_second;
    dist.bare_cq_rpc_p50_us = (*bare)[0].p50_us;
  }
  std::printf("%-36s %12s %12s %8s\n", "step", "distflow/s", "PyTorch/s",
              "ratio");
  auto row = [&](const char* name, double mine, double peer) {
    std::printf("%-36s %12.1f %12.1f %8.2f\n", name, mine, peer, mine / peer);
  };
  row("pull+push 4 MiB, same-host path", best.fast_pull_push,
      best.torch_pull_push);
  row("pull+push 4 MiB, TCP path", best.slow_pull_push,
      best.torch_tcp_pull_push);
  row("tiny (scalar += 1 on ps)", dist.tiny, best.torch_tiny);
  std::printf("%-36s %12.1f %12s %8.2f  (tiny step / bare call)\n",
              "bare unary gRPC call", dist.bare_rpc, "-",
              dist.tiny / dist.bare_rpc);
  std::printf("%-36s %12.1f %12s %8.2f  (tiny step / bare call)\n",
              "bare unary gRPC call, CQ server", dist.bare_cq_rpc, "-",
              dist.tiny / dist.bare_cq_rpc);
  std::printf(
      "median time of one call: tiny step %.1f us, bare call %.1f us (ratio "
      "%.2f), bare call on a CQ server %.1f us\n",
      dist.tiny_p50_us, dist.bare_rpc_p50_us,
      dist.bare_rpc_p50_us / dist.tiny_p50_us, dist.bare_cq_rpc_p50_us);
  if (rounds.any_quiet()) {
    std::printf(
        "(the best of %d rounds of each measurement in turn, counting rounds "
        "with at most %.0f%% of the CPU time stolen by the host; it stole "
        "%.0f%% during the whole run)\n",
        rounds.counted(), 100 * bench::kQuietStealShare, 100 * steal.Share());
  } else {
    std::printf(
        "(the best of %d rounds of each measurement in turn: every round lost "
        "CPU time to the host, %.0f%% during the whole run)\n",
        rounds.counted(), 100 * steal.Share());
  }
  return 0;
}
