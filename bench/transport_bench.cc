// One tensor moved between two tasks (two processes on 127.0.0.1), against a
// raw TCP stream between two processes moving the same bytes: prints GB/s of
// each and their ratio.
//
// distflow: a variable of the given size lives on a ps task (child process);
// each step the worker (this process) slices one element of it, so the whole
// tensor crosses tasks once per step, master round trips included. Measured
// three times: by the same-host path as it is (the worker maps the tensor
// where it lies in the ps's tensor arena: no byte moves, and the GB/s figure
// is the size over the step's time), by the same-host path with the ps's
// tensors on its heap (DISTFLOW_SHARED_TENSORS=0: the worker copies the
// tensor out of the ps process's memory), and with the path turned off, over
// TCP, as between two hosts (tensors of 256 KiB or more on a data
// connection; DISTFLOW_DATA_CONNECTION=0 sends them over gRPC instead). TCP:
// the child reads a length-prefixed message and answers one byte; the goal's
// peer is a plain reader, which sleeps in read() whenever it has taken all
// that has come. A second raw stream, whose reader polls for the rest of a
// message before it sleeps as distflow's does (RecvAll, data_socket.h), is
// printed beside it: on a virtual machine, where waking a sleeping thread
// costs tens of microseconds, it is the faster of the two. So is a third
// raw peer, for information: two streams, each moving half of every message
// with a thread of its own at each end, without waiting for each other
// between messages (the most two streams can do; distflow splits a large
// tensor across the two sockets of its data connection in the same way, but
// its halves go together).
// Usage: transport_bench [SIZE_KIB...] (default: 4, 1024, 65536, 524288).
#include <netinet/tcp.h>

#include <algorithm>
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
#include "distributed/rpc/data_socket.h"
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

// Reads length-prefixed messages from `fd`, answering each with a byte.
// `polls`: the reader polls for the rest of a message before it sleeps.
void SinkMessages(int fd, bool polls) {
  std::vector<char> buffer;
  uint64_t n = 0;
  while (ReadAll(fd, reinterpret_cast<char*>(&n), sizeof(n))) {
    buffer.resize(n);  // reused across messages, as a receiver would
    if (polls ? !df::RecvAll(fd, buffer.data(), n, /*rest_of_message=*/true)
                     .ok()
              : !ReadAll(fd, buffer.data(), n)) {
      break;
    }
    char ack = 1;
    if (!WriteAll(fd, &ack, 1)) break;
  }
}

// Serves `streams` connections on `port`, each on a thread of its own.
int TcpSink(int port, bool polls, int streams) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener, streams) != 0) {
    return 1;
  }
  std::vector<std::thread> readers;
  for (int i = 0; i < streams; ++i) {
    int fd = accept(listener, nullptr, nullptr);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    readers.emplace_back(SinkMessages, fd, polls);
  }
  for (std::thread& reader : readers) reader.join();
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

// Rounds of each measurement per size (see main).
constexpr int kRounds = 3;

int Reps(int64_t bytes) {
  const int64_t target = int64_t{1} << 30;  // move about 1 GiB per round
  return static_cast<int>(
      std::max<int64_t>(3, std::min<int64_t>(2000, target / bytes)));
}

// Sends `reps` messages of `bytes` on `fd`, each answered before the next.
void SendMessages(int fd, const std::vector<char>& data, int64_t bytes,
                  int reps) {
  for (int i = 0; i < reps; ++i) {
    uint64_t n = bytes;
    char ack;
    WriteAll(fd, reinterpret_cast<char*>(&n), sizeof(n));
    WriteAll(fd, data.data(), bytes);
    ReadAll(fd, &ack, 1);
  }
}

// GB/s of messages of `bytes` split evenly across the streams `fds`, each
// sent by a thread of its own.
double MeasureTcp(const std::vector<int>& fds, int64_t bytes) {
  const int64_t share = bytes / static_cast<int64_t>(fds.size());
  std::vector<char> data(bytes, 1);
  auto run = [&](int reps) {
    std::vector<std::thread> senders;
    for (const int fd : fds) {
      senders.emplace_back(SendMessages, fd, std::cref(data), share, reps);
    }
    for (std::thread& sender : senders) sender.join();
  };
  run(1);
  const int reps = Reps(bytes);
  auto start = std::chrono::steady_clock::now();
  run(reps);
  return share * static_cast<int64_t>(fds.size()) * reps /
         bench::Seconds(start) / 1e9;
}

struct DistflowResult {
  double gbps = 0;
  // CPU time of both tasks' processes per step, in microseconds.
  double cpu_us_per_step = 0;
};

// `ps_pid` is the ps task's process, whose CPU time is counted with this
// one's.
DistflowResult MeasureDistflow(const std::string& target, pid_t ps_pid,
                               int64_t bytes) {
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
    return {};
  }
  // Enough steps for the receiver's buffer pool to reach its steady state: at
  // 512 MiB, after two or three warm-up steps a fresh buffer (faulted in,
  // costing more than a step) still came within the timed steps; after six
  // it did not.
  for (int i = 0; i < 6; ++i) (void)session->Run({first});
  const int reps = Reps(bytes);
  const double cpu_start =
      bench::CpuSeconds(getpid()) + bench::CpuSeconds(ps_pid);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) {
    auto out = session->Run({first});
    if (!out.ok()) {
      std::cerr << "error: " << out.status() << "\n";
      return {};
    }
  }
  DistflowResult result;
  result.gbps = bytes * reps / bench::Seconds(start) / 1e9;
  result.cpu_us_per_step =
      (bench::CpuSeconds(getpid()) + bench::CpuSeconds(ps_pid) - cpu_start) /
      reps * 1e6;
  (void)session->Close();
  return result;
}

// How the tensor crosses from the ps to the worker.
enum class Path { kMapped, kCopied, kTcp };

df::ServerOptions TransportOptions(Path path) {
  df::ServerOptions options;
  options.same_host_transport = path != Path::kTcp;
  return options;
}

// A ps task in a child process and a worker task in this one.
struct TaskPair {
  explicit TaskPair(Path path)
      : ps_address(absl::StrCat("127.0.0.1:", bench::PickFreePort())),
        worker_address(absl::StrCat("127.0.0.1:", bench::PickFreePort())),
        ps({"/proc/self/exe", "--ps", ps_address, worker_address,
            std::to_string(static_cast<int>(path))}),
        worker(df::GrpcServer::Create(
                   {{"ps", {ps_address}}, {"worker", {worker_address}}},
                   "worker", 0, TransportOptions(path))
                   .value()) {}
  std::string ps_address;
  std::string worker_address;
  bench::Child ps;
  std::unique_ptr<df::GrpcServer> worker;
};

// Each measurement gets its own two tasks, so that this process holds one
// server at a time, as a task does. (Two servers in one process share gRPC's
// poller: every event of one woke the other's polling thread too, which cost
// both paths a wake-up per event.)
DistflowResult MeasureOnNewTasks(Path path, int64_t bytes) {
  TaskPair tasks(path);
  return MeasureDistflow(tasks.worker->target(), tasks.ps.pid(), bytes);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "--tcp_sink") {
    return TcpSink(std::stoi(argv[2]), std::string(argv[3]) == "polls",
                   std::stoi(argv[4]));
  }
  if (argc == 5 && std::string(argv[1]) == "--ps") {
    df::ClusterMap cluster = {{"ps", {argv[2]}}, {"worker", {argv[3]}}};
    const Path path = static_cast<Path>(std::stoi(argv[4]));
    // The ps's tensors on its heap: the worker copies them.
    if (path == Path::kCopied) setenv("DISTFLOW_SHARED_TENSORS", "0", 1);
    auto server =
        df::GrpcServer::Create(cluster, "ps", 0, TransportOptions(path))
            .value();
    return server->Join().ok() ? 0 : 1;
  }
  const std::string self = "/proc/self/exe";
  const int tcp_port = bench::PickFreePort();
  bench::Child sink(
      {self, "--tcp_sink", std::to_string(tcp_port), "sleeps", "1"});
  const int fd = ConnectWithRetry(tcp_port);
  const int polling_port = bench::PickFreePort();
  bench::Child polling_sink(
      {self, "--tcp_sink", std::to_string(polling_port), "polls", "1"});
  const int polling_fd = ConnectWithRetry(polling_port);
  const int two_port = bench::PickFreePort();
  bench::Child two_sink(
      {self, "--tcp_sink", std::to_string(two_port), "sleeps", "2"});
  const std::vector<int> two_fds = {ConnectWithRetry(two_port),
                                    ConnectWithRetry(two_port)};
  // Sizes in KiB from the command line, or the default four.
  std::vector<int64_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::stoll(argv[i]) << 10);
  if (sizes.empty()) {
    sizes = {int64_t{4} << 10, int64_t{1} << 20, int64_t{64} << 20,
             int64_t{512} << 20};
  }
  std::printf(
      "%-8s %11s %11s %11s %12s %12s %12s %8s %8s %8s %8s %8s %9s %9s %9s "
      "%7s\n",
      "size", "mapped GB/s", "copied GB/s", "TCP GB/s", "raw TCP GB/s",
      "polling GB/s", "2 strm GB/s", "mapped", "copied", "TCP", "TCP/poll",
      "TCP/2str", "CPU us", "CPU us", "CPU us", "stolen");
  for (int64_t bytes : sizes) {
    // The three in turn, kRounds times, keeping each one's best round: a
    // burst of other load then costs one round of one side, not the ratio.
    // A round in which the host stole CPU time counts only if none was
    // quiet, and up to bench::kExtraRoundsForSteal more rounds look for
    // quiet ones.
    struct Best {
      double tcp = 0;
      double polling_tcp = 0;
      double two_streams = 0;
      DistflowResult path[3];  // by Path
    };
    bench::QuietRounds<Best> rounds(kRounds);
    const bench::StealMeter steal;
    while (rounds.WantsAnother()) {
      const bench::StealMeter round_steal;
      const double t = MeasureTcp({fd}, bytes);
      const double polling = MeasureTcp({polling_fd}, bytes);
      const double two = MeasureTcp(two_fds, bytes);
      DistflowResult r[3];
      for (Path p : {Path::kMapped, Path::kCopied, Path::kTcp}) {
        r[static_cast<int>(p)] = MeasureOnNewTasks(p, bytes);
      }
      rounds.Record(round_steal.Share(), [&](Best* best) {
        best->tcp = std::max(best->tcp, t);
        best->polling_tcp = std::max(best->polling_tcp, polling);
        best->two_streams = std::max(best->two_streams, two);
        for (int i = 0; i < 3; ++i) {
          if (r[i].gbps > best->path[i].gbps) best->path[i] = r[i];
        }
      });
    }
    const double tcp = rounds.best().tcp;
    const double polling_tcp = rounds.best().polling_tcp;
    const double two_streams = rounds.best().two_streams;
    const DistflowResult* best = rounds.best().path;
    const std::string label = bytes >= (1 << 20)
                                  ? absl::StrCat(bytes >> 20, " MiB")
                                  : absl::StrCat(bytes >> 10, " KiB");
    std::printf(
        "%-8s %11.3f %11.3f %11.3f %12.3f %12.3f %12.3f %8.2f %8.2f %8.2f "
        "%8.2f %8.2f %9.0f %9.0f %9.0f %6.0f%%%s\n",
        label.c_str(), best[0].gbps, best[1].gbps, best[2].gbps, tcp,
        polling_tcp, two_streams, best[0].gbps / tcp, best[1].gbps / tcp,
        best[2].gbps / tcp, best[2].gbps / polling_tcp,
        best[2].gbps / two_streams, best[0].cpu_us_per_step,
        best[1].cpu_us_per_step, best[2].cpu_us_per_step, 100 * steal.Share(),
        rounds.any_quiet() ? "" : "  (every round lost CPU time to the host)");
    std::fflush(stdout);
  }
  std::printf(
      "(distflow's three paths: mapped where it lies on the ps (no byte "
      "moves), copied out of the ps's memory, over TCP; raw TCP with a plain "
      "reader, with a reader that polls for the rest of a message, and on "
      "two streams that each carry half of every message; the three paths' "
      "ratios to raw TCP with the plain reader, and the TCP path's to the "
      "polling one and to the two streams, the best of %d alternating rounds "
      "each; "
      "then the CPU time of both "
      "tasks per step on each path in their best rounds; the share of the "
      "machine's CPU time its host stole during all rounds of the size, of "
      "which only rounds with at most %.0f%% stolen count when there are "
      "any)\n",
      kRounds, 100 * bench::kQuietStealShare);
  close(fd);
  close(polling_fd);
  for (const int two_fd : two_fds) close(two_fd);
  return 0;
}
