// An in-process cluster for tests of distributed code: one real gRPC server
// per task on 127.0.0.1, on ports the system picks.
#ifndef DISTFLOW_DISTRIBUTED_RPC_TEST_CLUSTER_H_
#define DISTFLOW_DISTRIBUTED_RPC_TEST_CLUSTER_H_

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "distflow/ops.h"
#include "distflow/scope.h"
#include "distflow/session.h"
#include "distributed/rpc/data_socket.h"
#include "distributed/rpc/grpc_server.h"
#include "gtest/gtest.h"

namespace distflow {

// Options of a session whose master is `server`'s task.
inline SessionOptions SessionTarget(GrpcServer* server) {
  SessionOptions options;
  options.target = server->target();
  return options;
}

// The same, but reaching the master over gRPC even from `server`'s own
// process, as a client in another process does: the target spells the
// address another way, so the session does not find it as a master of its
// own process.
inline SessionOptions RemoteSessionTarget(GrpcServer* server) {
  SessionOptions options;
  options.target = absl::StrCat("grpc://localhost:", server->port());
  return options;
}

// Established TCP connections (IPv4) whose local port is `port`: those
// accepted by a listener on it.
inline int EstablishedTo(int port) {
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // the column names
  int n = 0;
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    const size_t colon = local.find(':');
    if (colon == std::string::npos || state != "01") continue;
    if (std::stoi(local.substr(colon + 1), nullptr, 16) == port) ++n;
  }
  return n;
}

// The sockets of each data connection between the servers of a test
// cluster (ServerOptions::data_sockets, or DISTFLOW_DATA_SOCKETS).
inline int DataSocketsPerConnection() {
  return DataSocketsFromEnv(ServerOptions().data_sockets);
}

// Waits up to 15 s for EstablishedTo(port) to reach `want`; its last value.
inline int AwaitEstablishedTo(int port, int want) {
  int now = EstablishedTo(port);
  for (int i = 0; i < 300 && now != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    now = EstablishedTo(port);
  }
  return now;
}

class TestCluster {
 public:
  // Starts tasks[job] servers for every job, then tells every server the
  // final addresses.
  static absl::StatusOr<std::unique_ptr<TestCluster>> Create(
      const std::map<std::string, int>& tasks,
      const ServerOptions& options = {}) {
    auto cluster = std::unique_ptr<TestCluster>(new TestCluster);
    ClusterMap placeholder;
    for (const auto& [job, n] : tasks) {
      placeholder[job].assign(n, "127.0.0.1:0");
    }
    for (const auto& [job, n] : tasks) {
      for (int i = 0; i < n; ++i) {
        auto server = GrpcServer::Create(placeholder, job, i, options);
        if (!server.ok()) return server.status();
        cluster->cluster_[job].push_back(
            absl::StrCat("127.0.0.1:", (*server)->port()));
        cluster->servers_[job].push_back(std::move(*server));
      }
    }
    cluster->Broadcast();
    return cluster;
  }

  GrpcServer* server(const std::string& job, int index) {
    return servers_[job][index].get();
  }
  const ClusterMap& cluster() const { return cluster_; }
  std::string address(const std::string& job, int index) {
    return cluster_[job][index];
  }
  // Stops and destroys one task's server (a dead task).
  void Kill(const std::string& job, int index) { servers_[job][index].reset(); }
  // Starts a fresh server for a task on its old address (a restarted task).
  absl::Status Restart(const std::string& job, int index,
                       const ServerOptions& options = {}) {
    servers_[job][index].reset();
    auto server = GrpcServer::Create(cluster_, job, index, options);
    if (!server.ok()) return server.status();
    servers_[job][index] = std::move(*server);
    return absl::OkStatus();
  }

 private:
  TestCluster() = default;
  void Broadcast() {
    for (auto& [job, servers] : servers_) {
      for (auto& s : servers) {
        if (s != nullptr) s->SetCluster(cluster_);
      }
    }
  }
  ClusterMap cluster_;
  std::map<std::string, std::vector<std::unique_ptr<GrpcServer>>> servers_;
};

// A test with one ps task and one worker task in `cluster_`.
class PsAndWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(*cluster);
  }
  std::unique_ptr<TestCluster> cluster_;
};

// The smallest step with a part on a ps: a variable v = 3 on ps task 0 and
// v + v, through a session on worker task 0's master. `ready` is the status
// of initializing v and running the step once.
struct DoubledPsVariable {
  explicit DoubledPsVariable(TestCluster* cluster)
      : root(Scope::NewRootScope()),
        v(root.WithDevice("/job:ps/task:0").WithOpName("v"),
          Tensor::Scalar<float>(3)),
        doubled(ops::Add(root.WithOpName("doubled"), v, v)),
        init(ops::GlobalVariablesInitializer(root)) {
    auto created = ClientSession::Create(
        root, SessionTarget(cluster->server("worker", 0)));
    if (!created.ok()) {
      ready = created.status();
      return;
    }
    session = std::move(*created);
    ready = session->RunTargets({init});
    if (ready.ok()) ready = session->Run({doubled}).status();
  }
  Scope root;
  ops::Variable v;
  Output doubled;
  Operation init;
  std::unique_ptr<ClientSession> session;
  absl::Status ready;

  // After a task restarted: initializes v again and runs the step until one
  // succeeds or 15 s pass, the last result. The channel to the new task may
  // first wait out a reconnect backoff (up to 1 s a try), longer on a loaded
  // machine.
  absl::StatusOr<std::vector<Tensor>> RunOnceRecovered() {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(15);
    absl::StatusOr<std::vector<Tensor>> out;
    do {
      (void)session->RunTargets({init});
      out = session->Run({doubled});
      if (out.ok()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    } while (std::chrono::steady_clock::now() < deadline);
    return out;
  }
};

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_RPC_TEST_CLUSTER_H_
