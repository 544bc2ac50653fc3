// One tensor moved between two tasks (two processes on 127.0.0.1), against a
// raw TCP stream between two processes moving the same bytes: prints GB/s of
// each and their ratio.
//
// distflow: a variable of the given size lives on a ps task (child process);
// each step the worker (this process) slices one element of it, so the whole
// tensor crosses tasks once per step, master round trips included. Measured
// twice: by the same-host path (the worker copies the tensor out of the ps
// process's memory) and with it turned off, over TCP, as between two hosts.
// TCP: the child reads a length-prefixed message and answers one byte.
// `transport_bench --tcp_path` measures only the TCP path and raw TCP (for
// profiling it alone).
#include <netinet/tcp.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench_util.h"
#include "distflow/distflow.h"
#include "distributed/rpc/grpc_server.h"

namespace df = distflow;

namespace {

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t k = write(fd, p, n);
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}
bool ReadAll(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t k = read(fd, p, n);
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

int TcpSink(int port) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener, 1) != 0) {
    return 1;
  }
  int fd = accept(listener, nullptr, nullptr);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  std::vector<char> buffer;
  uint64_t n = 0;
  while (ReadAll(fd, reinterpret_cast<char*>(&n), sizeof(n))) {
    buffer.resize(n);  // reused across messages, as a receiver would
    if (!ReadAll(fd, buffer.data(), n)) break;
    char ack = 1;
    if (!WriteAll(fd, &ack, 1)) break;
  }
  return 0;
}

int ConnectWithRetry(int port) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return fd;
    }
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

int Reps(int64_t bytes) {
  const int64_t target = int64_t{2} << 30;  // move about 2 GiB per size
  return static_cast<int>(
      std::max<int64_t>(3, std::min<int64_t>(2000, target / bytes)));
}

// Throughput, and the CPU time each side spent per GB moved (the sending
// child's and this process's, which receives).
struct Rate {
  double gbps = 0;
  double sender_cpu_s_per_gb = 0;
  double receiver_cpu_s_per_gb = 0;
};

// Runs `once` `reps` times, timing it and counting the CPU time of `sender`
// and of this process.
template <typename Fn>
Rate Measure(int64_t bytes, pid_t sender, Fn once) {
  const int reps = Reps(bytes);
  const double sender_cpu = bench::CpuSeconds(sender);
  const double self_cpu = bench::CpuSeconds(getpid());
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) {
    if (!once()) return Rate();
  }
  const double gb = static_cast<double>(bytes) * reps / 1e9;
  Rate rate;
  rate.gbps = gb / bench::Seconds(start);
  rate.sender_cpu_s_per_gb = (bench::CpuSeconds(sender) - sender_cpu) / gb;
  rate.receiver_cpu_s_per_gb = (bench::CpuSeconds(getpid()) - self_cpu) / gb;
  return rate;
}

// Raw TCP: this process sends, the child `sink` receives (the columns of
// Rate are swapped by the caller).
Rate MeasureTcp(int fd, int64_t bytes, pid_t sink) {
  std::vector<char> data(bytes, 1);
  auto once = [&] {
    uint64_t n = bytes;
    char ack;
    return WriteAll(fd, reinterpret_cast<char*>(&n), sizeof(n)) &&
           WriteAll(fd, data.data(), bytes) && ReadAll(fd, &ack, 1);
  };
  once();
  Rate rate = Measure(bytes, sink, once);
  std::swap(rate.sender_cpu_s_per_gb, rate.receiver_cpu_s_per_gb);
  return rate;
}

// The ps task (`ps`, a child process) sends, this process receives.
Rate MeasureDistflow(const std::string& target, int64_t bytes, pid_t ps_pid) {
  const int32_t n = static_cast<int32_t>(bytes / 4);
  df::Scope root = df::Scope::NewRootScope();
  df::Scope ps = root.WithDevice("/job:ps/task:0");
  df::ops::Variable v(
      ps.WithOpName(absl::StrCat("v", bytes)),
      df::ops::Fill(ps, df::Tensor::Vector<int32_t>({n}), 1.0f));
  df::Output first = df::ops::Slice(root.WithDevice("/job:worker/task:0"), v,
                                    df::Tensor::Vector<int32_t>({0}),
                                    df::Tensor::Vector<int32_t>({1}));
  df::Operation init = df::ops::GlobalVariablesInitializer(root);
  df::SessionOptions options;
  options.target = target;
  auto session = df::ClientSession::Create(root, options).value();
  absl::Status s;
  for (int attempt = 0; attempt < 100; ++attempt) {
    s = session->RunTargets({init});
    if (!absl::IsUnavailable(s)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!s.ok()) {
    std::cerr << "error: " << s << "\n";
    return Rate();
  }
  for (int i = 0; i < 2; ++i) (void)session->Run({first});
  const Rate rate = Measure(bytes, ps_pid, [&] {
    auto out = session->Run({first});
    if (!out.ok()) std::cerr << "error: " << out.status() << "\n";
    return out.ok();
  });
  (void)session->Close();
  return rate;
}

df::ServerOptions TransportOptions(bool same_host) {
  df::ServerOptions options;
  options.same_host_transport = same_host;
  return options;
}

// A ps task in a child process and a worker task in this one.
struct TaskPair {
  explicit TaskPair(bool same_host)
      : ps_address(absl::StrCat("127.0.0.1:", bench::PickFreePort())),
        worker_address(absl::StrCat("127.0.0.1:", bench::PickFreePort())),
        ps({"/proc/self/exe", "--ps", ps_address, worker_address,
            same_host ? "1" : "0"}),
        worker(df::GrpcServer::Create(
                   {{"ps", {ps_address}}, {"worker", {worker_address}}},
                   "worker", 0, TransportOptions(same_host))
                   .value()) {}
  std::string ps_address;
  std::string worker_address;
  bench::Child ps;
  std::unique_ptr<df::GrpcServer> worker;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--tcp_sink") {
    return TcpSink(std::stoi(argv[2]));
  }
  if (argc == 5 && std::string(argv[1]) == "--ps") {
    df::ClusterMap cluster = {{"ps", {argv[2]}}, {"worker", {argv[3]}}};
    auto server =
        df::GrpcServer::Create(cluster, "ps", 0,
                               TransportOptions(std::string(argv[4]) == "1"))
            .value();
    return server->Join().ok() ? 0 : 1;
  }
  const bool tcp_path_only = argc == 2 && std::string(argv[1]) == "--tcp_path";
  const std::string self = "/proc/self/exe";
  const int tcp_port = bench::PickFreePort();
  bench::Child sink({self, "--tcp_sink", std::to_string(tcp_port)});
  const int fd = ConnectWithRetry(tcp_port);
  std::unique_ptr<TaskPair> same_host;
  if (!tcp_path_only)
    same_host = std::make_unique<TaskPair>(/*same_host=*/true);
  TaskPair over_tcp(/*same_host=*/false);
  std::printf("%-8s %14s %14s %13s %10s %9s %17s %17s\n", "size",
              "same-host GB/s", "TCP path GB/s", "raw TCP GB/s", "same-host",
              "TCP path", "CPU s/GB TCP path", "CPU s/GB raw TCP");
  for (int64_t bytes : {int64_t{4} << 10, int64_t{1} << 20, int64_t{64} << 20,
                        int64_t{512} << 20}) {
    const Rate tcp = MeasureTcp(fd, bytes, sink.pid());
    const double fast = same_host ? MeasureDistflow(same_host->worker->target(),
                                                    bytes, same_host->ps.pid())
                                        .gbps
                                  : 0;
    const Rate slow =
        MeasureDistflow(over_tcp.worker->target(), bytes, over_tcp.ps.pid());
    const std::string label = bytes >= (1 << 20)
                                  ? absl::StrCat(bytes >> 20, " MiB")
                                  : absl::StrCat(bytes >> 10, " KiB");
    std::printf(
        "%-8s %14.3f %14.3f %13.3f %10.2f %9.2f %8.2f +%7.2f %8.2f +%7.2f\n",
        label.c_str(), fast, slow.gbps, tcp.gbps, fast / tcp.gbps,
        slow.gbps / tcp.gbps, slow.sender_cpu_s_per_gb,
        slow.receiver_cpu_s_per_gb, tcp.sender_cpu_s_per_gb,
        tcp.receiver_cpu_s_per_gb);
    std::fflush(stdout);
  }
  std::printf(
      "(distflow / raw TCP: same run; CPU: sender + receiver, the receiver's "
      "including the client and master of the TCP path's steps)\n");
  close(fd);
  return 0;
}
