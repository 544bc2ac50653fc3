// Tasks of one host talk over their Unix sockets: real servers on 127.0.0.1,
// with the connections on each socket read from /proc/net/unix (this network
// namespace's Unix sockets, with the name each was accepted on).
#include "distributed/rpc/local_socket.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "distflow/distflow.h"
#include "distributed/local_master.h"
#include "distributed/rpc/grpc_worker_cache.h"
#include "distributed/rpc/test_cluster.h"
#include "gtest/gtest.h"
#include "proto/worker.pb.h"

namespace distflow {
namespace {

// Connections accepted on the Unix socket of the task at `address`.
int UnixConnections(const std::string& address) {
  std::ifstream table("/proc/net/unix");
  const std::string name = absl::StrCat("@distflow/", address);
  int connected = 0;
  std::string line;
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string num, refs, protocol, flags, type, state, inode, path;
    fields >> num >> refs >> protocol >> flags >> type >> state >> inode >>
        path;
    if (path == name && state == "03") ++connected;
  }
  return connected;
}

// Waits up to 15 s for the connections on the task's socket to reach `want`
// (gRPC closes a dropped channel's connection in the background).
int AwaitUnixConnections(const std::string& address, int want) {
  int now = UnixConnections(address);
  for (int i = 0; i < 300 && now != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    now = UnixConnections(address);
  }
  return now;
}

// Runs `steps` increments of a counter on the ps from the worker's session;
// the counter's value afterwards.
absl::StatusOr<float> CountOnPs(GrpcServer* worker, int steps) {
  Scope root = Scope::NewRootScope();
  Scope ps = root.WithDevice("/job:ps/task:0");
  ops::Variable counter(ps.WithOpName("counter"), Tensor::Scalar<float>(0));
  Output tick = ops::AssignAdd(ps.WithOpName("tick"), counter, 1.0f);
  Operation init = ops::GlobalVariablesInitializer(root);
  auto session = ClientSession::Create(root, SessionTarget(worker));
  if (!session.ok()) return session.status();
  if (absl::Status s = (*session)->RunTargets({init}); !s.ok()) return s;
  for (int i = 0; i < steps; ++i) {
    if (absl::Status s = (*session)->RunTargets({tick.op()}); !s.ok()) {
      return s;
    }
  }
  auto out = (*session)->Run({Output(counter)});
  if (!out.ok()) return out.status();
  return (*out)[0].scalar<float>();
}

absl::Status GetStatus(WorkerInterface* worker, std::string* task) {
  proto::GetStatusRequest request;
  proto::GetStatusResponse response;
  absl::Notification done;
  absl::Status status;
  worker->GetStatusAsync(&request, &response, [&](const absl::Status& s) {
    status = s;
    done.Notify();
  });
  done.WaitForNotification();
  *task = response.task();
  return status;
}

class LocalSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!LocalSocketAllowedByEnv()) {
      GTEST_SKIP() << "DISTFLOW_LOCAL_SOCKET=0 turns the Unix sockets off";
    }
  }
};

TEST_F(LocalSocketTest, NamesAndLocalAddresses) {
  EXPECT_EQ(LocalSocketTarget("127.0.0.1:2222"),
            "unix-abstract:distflow/127.0.0.1:2222");
  EXPECT_TRUE(IsLocalAddress("127.0.0.1:2222"));
  EXPECT_TRUE(IsLocalAddress("localhost:2222"));
  EXPECT_TRUE(IsLocalAddress("[::1]:2222"));
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  EXPECT_TRUE(IsLocalAddress(absl::StrCat(host, ":2222")));
  // A documentation address (RFC 5737): no interface of this host has it.
  EXPECT_FALSE(IsLocalAddress("192.0.2.7:2222"));
}

TEST_F(LocalSocketTest, TasksOfOneHostCallEachOtherOnTheUnixSocket) {
  // Started on port 0, as tests do: each task reserves its port first.
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::string ps = (*cluster)->address("ps", 0);
  EXPECT_TRUE(LocalSocketListening(ps));
  auto count = CountOnPs((*cluster)->server("worker", 0), 10);
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 10.0f);
  EXPECT_GE(UnixConnections(ps), 1) << "the worker reached the ps over TCP";
  // The fetched counter was pushed by the ps to the worker's task.
  EXPECT_GE(UnixConnections((*cluster)->address("worker", 0)), 1)
      << "the ps reached the worker over TCP";
}

TEST_F(LocalSocketTest, TaskWithoutTheSocketIsReachedOverTcp) {
  ServerOptions no_socket;
  no_socket.local_socket = false;
  const ClusterMap placeholder = {{"ps", {"127.0.0.1:0"}},
                                  {"worker", {"127.0.0.1:0"}}};
  auto ps = GrpcServer::Create(placeholder, "ps", 0, no_socket);
  ASSERT_TRUE(ps.ok()) << ps.status();
  auto worker = GrpcServer::Create(placeholder, "worker", 0);
  ASSERT_TRUE(worker.ok()) << worker.status();
  const std::string ps_address = absl::StrCat("127.0.0.1:", (*ps)->port());
  const std::string worker_address =
      absl::StrCat("127.0.0.1:", (*worker)->port());
  const ClusterMap cluster = {{"ps", {ps_address}},
                              {"worker", {worker_address}}};
  (*ps)->SetCluster(cluster);
  (*worker)->SetCluster(cluster);
  EXPECT_FALSE(LocalSocketListening(ps_address));
  EXPECT_TRUE(LocalSocketListening(worker_address));

  auto count = CountOnPs(worker->get(), 10);
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 10.0f);
  EXPECT_EQ(UnixConnections(ps_address), 0);
}

TEST_F(LocalSocketTest, SocketOfAnotherTaskIsNotUsed) {
  auto cluster = TestCluster::Create({{"ps", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::string address = (*cluster)->address("ps", 0);
  // A cluster that puts a different task at the ps's address: the server
  // there says it is /job:ps/..., so this cache must not use its socket.
  GrpcWorkerCache wrong({{"other", {address}}}, "/job:client/replica:0/task:0",
                        nullptr, {}, {}, nullptr, /*local_socket=*/true);
  auto other = wrong.GetWorker("/job:other/replica:0/task:0");
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_EQ(AwaitUnixConnections(address, 0), 0);
  std::string task;
  ASSERT_EQ(GetStatus(*other, &task), absl::OkStatus());
  EXPECT_EQ(task, "/job:ps/replica:0/task:0");
  EXPECT_EQ(UnixConnections(address), 0);

  GrpcWorkerCache right({{"ps", {address}}}, "/job:client/replica:0/task:0",
                        nullptr, {}, {}, nullptr, /*local_socket=*/true);
  auto ps = right.GetWorker("/job:ps/replica:0/task:0");
  ASSERT_TRUE(ps.ok()) << ps.status();
  ASSERT_EQ(GetStatus(*ps, &task), absl::OkStatus());
  EXPECT_GE(UnixConnections(address), 1);
}

TEST_F(LocalSocketTest, SessionReachesItsMasterInAnotherProcessOnTheSocket) {
  auto cluster = TestCluster::Create({{"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  GrpcServer* server = (*cluster)->server("worker", 0);
  const std::string address = (*cluster)->address("worker", 0);
  // As if the master were in another process: the session must call it
  // over gRPC.
  UnregisterLocalMaster(server->target());
  Scope root = Scope::NewRootScope();
  Output sum = ops::Add(root, Tensor::Scalar<float>(2), 3.0f);
  auto session = ClientSession::Create(root, SessionTarget(server));
  ASSERT_TRUE(session.ok()) << session.status();
  auto out = (*session)->Run({sum});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 5.0f);
  EXPECT_GE(UnixConnections(address), 1) << "the session reached it over TCP";
}

TEST_F(LocalSocketTest, RestartedTaskIsToldApartOverTheUnixSocket) {
  auto cluster = TestCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::string ps = (*cluster)->address("ps", 0);
  DoubledPsVariable model(cluster->get());
  ASSERT_EQ(model.ready, absl::OkStatus());
  ClientSession* session = model.session.get();
  ASSERT_GE(UnixConnections(ps), 1);

  ASSERT_EQ((*cluster)->Restart("ps", 0), absl::OkStatus());
  // The step that meets the new task fails: its graphs and variables are
  // gone (ABORTED, from the incarnation in the request), or the connection
  // broke under it (UNAVAILABLE).
  absl::Status first = session->Run({model.doubled}).status();
  EXPECT_TRUE(absl::IsAborted(first) || absl::IsUnavailable(first)) << first;
  if (absl::IsAborted(first)) {
    EXPECT_NE(first.message().find("restarted"), std::string::npos) << first;
  } else if (absl::IsUnavailable(first)) {
    EXPECT_NE(first.message().find(ps), std::string::npos)
        << "the error names the task's TCP address: " << first;
  }
  auto out = model.RunOnceRecovered();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 6.0f);
  // The new task is reached on its socket too.
  EXPECT_GE(UnixConnections(ps), 1);
}

}  // namespace
}  // namespace distflow
