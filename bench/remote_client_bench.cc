// Steps of a client whose master runs in another process (a session with
// target grpc://host:port), feeding a tensor and fetching it back:
//  - distflow: MasterStreamService.RunStep, feeds and fetches streamed as raw
//    bytes that point into the tensors (what a remote session uses);
//  - peer: the unary MasterService.RunStep, feeds and fetches as TensorProto
//    messages (what a remote session used before; limited to 2 GiB).
// Both run steps of one session of the same master process over 127.0.0.1,
// called directly (without the session layer above them, the same for
// both), taking turns round by round. Prints the median time of one step of
// each, and the ratio peer / distflow (above 1: distflow is faster).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "bench_util.h"
#include "core/tensor_coding.h"
#include "distflow/distflow.h"
#include "distributed/rpc/grpc_server.h"
#include "distributed/rpc/grpc_util.h"
#include "distributed/rpc/master_stream_client.h"
#include "proto/master.grpc.pb.h"

namespace df = distflow;

namespace {

using StepFn = std::function<absl::Status(const df::Tensor&)>;

// The unary RunStep of the first protocol version, called directly.
class UnaryClient {
 public:
  static absl::StatusOr<std::unique_ptr<UnaryClient>> Create(
      const std::string& address, const df::proto::GraphDef& graph) {
    auto client = std::unique_ptr<UnaryClient>(new UnaryClient);
    client->stub_ = df::proto::MasterService::NewStub(df::NewChannel(address));
    df::proto::CreateSessionRequest request;
    *request.mutable_graph() = graph;
    df::proto::CreateSessionResponse response;
    grpc::ClientContext ctx;
    ctx.set_wait_for_ready(true);  // the master may still be starting
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(30));
    DF_RETURN_IF_ERROR(df::FromGrpcStatus(
        client->stub_->CreateSession(&ctx, request, &response)));
    client->handle_ = response.session_handle();
    return client;
  }
  const std::string& handle() const { return handle_; }
  absl::Status Step(const df::Tensor& value) {
    df::proto::RunStepRequest request;
    request.set_session_handle(handle_);
    request.add_feed_name("x:0");
    df::TensorToProto(value, request.add_feed());
    request.add_fetch("y:0");
    df::proto::RunStepResponse response;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::minutes(5));
    DF_RETURN_IF_ERROR(
        df::FromGrpcStatus(stub_->RunStep(&ctx, request, &response)));
    DF_ASSIGN_OR_RETURN(df::Tensor out, df::TensorFromProto(response.fetch(0)));
    if (out.TotalBytes() != value.TotalBytes()) {
      return absl::InternalError("the unary RunStep fetched the wrong size");
    }
    return absl::OkStatus();
  }

 private:
  UnaryClient() = default;
  std::unique_ptr<df::proto::MasterService::Stub> stub_;
  std::string handle_;
};

// Median seconds per step of each of `fns`, over rounds in which they take
// turns (so that they see the same load on a shared machine).
absl::StatusOr<std::vector<double>> MedianStepSeconds(
    const std::vector<StepFn>& fns, const df::Tensor& value, int steps) {
  constexpr int kRounds = 7;
  std::vector<std::vector<double>> times(fns.size());
  for (const StepFn& fn : fns) {
    for (int i = 0; i < 3; ++i) DF_RETURN_IF_ERROR(fn(value));  // warm-up
  }
  for (int round = 0; round < kRounds; ++round) {
    for (size_t f = 0; f < fns.size(); ++f) {
      for (int i = 0; i < steps; ++i) {
        auto start = std::chrono::steady_clock::now();
        DF_RETURN_IF_ERROR(fns[f](value));
        times[f].push_back(bench::Seconds(start));
      }
    }
  }
  std::vector<double> medians;
  for (auto& t : times) {
    std::sort(t.begin(), t.end());
    medians.push_back(t[t.size() / 2]);
  }
  return medians;
}

absl::Status Run() {
  const std::string address = absl::StrCat("127.0.0.1:", bench::PickFreePort());
  bench::Child master({"/proc/self/exe", "--master", address});

  df::Scope root = df::Scope::NewRootScope();
  df::Output x =
      df::ops::Placeholder(root.WithOpName("x"), df::DataType::kFloat);
  df::ops::Identity(root.WithOpName("y"), x);
  df::proto::GraphDef graph;
  DF_RETURN_IF_ERROR(root.ToGraphDef(&graph));
  DF_ASSIGN_OR_RETURN(auto unary, UnaryClient::Create(address, graph));
  df::MasterStreamClient streams(df::NewChannel(address), address);

  StepFn stream = [&](const df::Tensor& value) -> absl::Status {
    DF_ASSIGN_OR_RETURN(
        auto out, streams.RunStep(unary->handle(), {{"x:0", value}}, {"y:0"},
                                  {}, /*deadline_ms=*/300'000));
    if (out[0].TotalBytes() != value.TotalBytes()) {
      return absl::InternalError("the stream RunStep fetched the wrong size");
    }
    return absl::OkStatus();
  };
  StepFn proto = [&](const df::Tensor& value) { return unary->Step(value); };

  std::printf("%-28s %14s %14s %8s %12s\n", "feed = fetch", "stream us",
              "unary us", "ratio", "stream GB/s");
  struct Size {
    const char* name;
    int64_t elements;
    int steps;
  };
  for (const Size& size :
       {Size{"4 bytes (tiny step)", 1, 300}, Size{"64 KiB", 16 << 10, 100},
        Size{"4 MiB", 1 << 20, 20}, Size{"256 MiB", 64 << 20, 2}}) {
    df::Tensor value(df::DataType::kFloat, df::TensorShape({size.elements}));
    std::fill_n(value.flat<float>().data(), size.elements, 1.0f);
    DF_ASSIGN_OR_RETURN(std::vector<double> s,
                        MedianStepSeconds({stream, proto}, value, size.steps));
    std::printf("%-28s %14.1f %14.1f %8.2f %12.2f\n", size.name, s[0] * 1e6,
                s[1] * 1e6, s[1] / s[0], 2.0 * value.TotalBytes() / s[0] / 1e9);
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--master") {
    auto server = df::GrpcServer::Create({{"worker", {argv[2]}}}, "worker", 0);
    if (!server.ok()) return 1;
    return (*server)->Join().ok() ? 0 : 1;
  }
  absl::Status s = Run();
  if (!s.ok()) {
    std::cerr << "error: " << s << "\n";
    return 1;
  }
  return 0;
}
