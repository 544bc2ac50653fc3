// The life of a registered graph on a task's worker: registered once per
// signature of a session and reused by its steps, dropped when the session
// closes or when the master that registered it is replaced by a new process
// of its task, refused when the task itself restarted.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "distflow/distflow.h"
#include "distributed/master.h"
#include "distributed/rpc/test_cluster.h"
#include "distributed/worker.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/worker.pb.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

constexpr char kMasterTask[] = "/job:worker/replica:0/task:0";
constexpr char kOtherMasterTask[] = "/job:worker/replica:0/task:1";

// A partition of one constant, as a master registers it.
proto::RegisterGraphRequest Partition(const std::string& master_task,
                                      const std::string& incarnation) {
  Scope s = Scope::NewRootScope();
  ops::Const(s.WithOpName("seven"), 7.0f);
  proto::RegisterGraphRequest request;
  EXPECT_TRUE(s.ToGraphDef(request.mutable_graph()).ok());
  request.set_session_handle("session_1_" + incarnation);
  request.set_master_task(master_task);
  request.set_master_incarnation(incarnation);
  return request;
}

// Registers the graph on `worker`; its handle.
absl::StatusOr<std::string> TryRegister(
    Worker* worker, const proto::RegisterGraphRequest& request) {
  proto::RegisterGraphResponse response;
  absl::Status s = CallAndWait([&](StatusCallback done) {
    worker->RegisterGraphAsync(&request, &response, std::move(done));
  });
  if (!s.ok()) return s;
  EXPECT_EQ(response.incarnation(), worker->incarnation());
  return response.graph_handle();
}

std::string Register(Worker* worker,
                     const proto::RegisterGraphRequest& request) {
  auto handle = TryRegister(worker, request);
  EXPECT_TRUE(handle.ok()) << handle.status();
  return handle.value_or("");
}

absl::Status Deregister(Worker* worker, const std::string& handle) {
  proto::DeregisterGraphRequest request;
  request.set_graph_handle(handle);
  proto::DeregisterGraphResponse response;
  return CallAndWait([&](StatusCallback done) {
    worker->DeregisterGraphAsync(&request, &response, std::move(done));
  });
}

absl::Status RunGraph(Worker* worker, const std::string& handle,
                      uint64_t incarnation) {
  // A worker refuses a step that has already finished there.
  static int64_t next_step_id = 1000;
  proto::RunGraphRequest request;
  request.set_graph_handle(handle);
  request.set_incarnation(incarnation);
  request.set_step_id(next_step_id++);
  proto::RunGraphResponse response;
  return CallAndWait([&](StatusCallback done) {
    worker->RunGraphAsync(&request, &response, std::move(done));
  });
}

class GraphRegistrationTest : public PsAndWorkerTest {
 protected:
  Worker* ps() { return cluster_->server("ps", 0)->worker(); }
};

TEST_F(GraphRegistrationTest, OncePerSignatureAndDeregisteredOnClose) {
  DoubledPsVariable model(cluster_.get());
  ASSERT_EQ(model.ready, absl::OkStatus());
  // The initializer's step and the doubling step each put a partition on
  // the ps (the variable's initial value, its read).
  EXPECT_EQ(ps()->NumGraphs(), 2);
  for (int step = 0; step < 3; ++step) {
    auto out = model.session->Run({model.doubled});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].scalar<float>(), 6.0f);
  }
  EXPECT_EQ(ps()->NumGraphs(), 2);
  // Another signature (a fetch of the variable itself) is one more.
  auto value = model.session->Run({model.v});
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(ps()->NumGraphs(), 3);
  ASSERT_EQ(model.session->Close(), absl::OkStatus());
  EXPECT_EQ(ps()->NumGraphs(), 0);
}

TEST_F(GraphRegistrationTest, NewProcessOfAMasterDropsTheGraphsOfTheOldOne) {
  Worker* worker = ps();
  const uint64_t incarnation = worker->incarnation();
  const std::string old1 = Register(worker, Partition(kMasterTask, "aaaa"));
  const std::string old2 = Register(worker, Partition(kMasterTask, "aaaa"));
  const std::string other =
      Register(worker, Partition(kOtherMasterTask, "bbbb"));
  EXPECT_EQ(worker->NumGraphs(), 3);
  EXPECT_EQ(RunGraph(worker, old1, incarnation), absl::OkStatus());

  // The master's task restarted: its first registration drops the graphs
  // of its earlier process, and only those.
  const std::string fresh = Register(worker, Partition(kMasterTask, "cccc"));
  EXPECT_EQ(worker->NumGraphs(), 2);
  for (const std::string& gone : {old1, old2}) {
    absl::Status s = RunGraph(worker, gone, incarnation);
    EXPECT_TRUE(absl::IsAborted(s)) << s;
    EXPECT_THAT(s.message(), HasSubstr(gone));
    EXPECT_THAT(s.message(), HasSubstr("register it again"));
  }
  EXPECT_EQ(RunGraph(worker, fresh, incarnation), absl::OkStatus());
  EXPECT_EQ(RunGraph(worker, other, incarnation), absl::OkStatus());
  // More registrations of the same process keep what it registered.
  Register(worker, Partition(kMasterTask, "cccc"));
  EXPECT_EQ(worker->NumGraphs(), 3);
  EXPECT_EQ(RunGraph(worker, fresh, incarnation), absl::OkStatus());
}

// Incarnations are compared for equality only: the process that registers
// last is the master task's, whatever its incarnation looks like. A made-up
// incarnation that sorts after every other ("~") or a restarted chief whose
// clock is behind cannot lock the chief's newest process out: it registers
// again and its graphs run.
TEST_F(GraphRegistrationTest, NoIncarnationLocksAMasterOut) {
  Worker* worker = ps();
  Register(worker, Partition(kMasterTask, "cccc"));
  Register(worker, Partition(kMasterTask, "~"));
  const std::string back = Register(worker, Partition(kMasterTask, "aaaa"));
  EXPECT_EQ(worker->NumGraphs(), 1);
  EXPECT_EQ(RunGraph(worker, back, worker->incarnation()), absl::OkStatus());
}

// A step of a master's earlier process still waiting on this task (a dead
// chief's dequeue or gradient take) is aborted when a new process of that
// task registers: it would otherwise take what is meant for the new one.
TEST_F(GraphRegistrationTest, StepsOfAReplacedProcessAreAborted) {
  Worker* worker = ps();
  Scope s = Scope::NewRootScope();
  Output queue = ops::FIFOQueue(s.WithOpName("q"), DataType::kFloat, {},
                                /*shared_name=*/"shared_q");
  ops::QueueDequeue(s.WithOpName("take"), queue);
  proto::RegisterGraphRequest waits = Partition(kMasterTask, "aaaa");
  ASSERT_TRUE(s.ToGraphDef(waits.mutable_graph()).ok());
  const std::string handle = Register(worker, waits);

  proto::RunGraphRequest request;
  request.set_graph_handle(handle);
  request.set_incarnation(worker->incarnation());
  request.set_step_id(77);
  proto::RunGraphResponse response;
  absl::Notification finished;
  absl::Status step_status;
  worker->RunGraphAsync(&request, &response, [&](const absl::Status& st) {
    step_status = st;
    finished.Notify();
  });
  EXPECT_FALSE(finished.WaitForNotificationWithTimeout(absl::Milliseconds(200)))
      << "the dequeue did not wait: " << step_status;

  Register(worker, Partition(kMasterTask, "cccc"));
  ASSERT_TRUE(finished.WaitForNotificationWithTimeout(absl::Seconds(10)))
      << "the replaced process's step still waits";
  EXPECT_TRUE(absl::IsCancelled(step_status) || absl::IsAborted(step_status))
      << step_status;
  EXPECT_THAT(step_status.message(), HasSubstr("/job:ps/replica:0/task:0"));
}

// A task keeps a bounded number of graphs: one more than that is refused with
// RESOURCE_EXHAUSTED naming the task and who asked, and deregistering makes
// room again.
TEST_F(GraphRegistrationTest, RegisteredGraphsAreBounded) {
  Worker* worker = ps();
  std::string last;
  for (int i = 0; i < (1 << 14); ++i) {
    last = Register(worker, Partition(kMasterTask, "aaaa"));
  }
  auto refused = TryRegister(worker, Partition(kMasterTask, "aaaa"));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(refused.status())) << refused.status();
  EXPECT_THAT(refused.status().message(),
              HasSubstr("/job:ps/replica:0/task:0"));
  EXPECT_THAT(refused.status().message(), HasSubstr(kMasterTask));
  ASSERT_TRUE(Deregister(worker, last).ok());
  EXPECT_TRUE(TryRegister(worker, Partition(kMasterTask, "aaaa")).ok());
}

// Every master process has an incarnation of its own, made without a clock.
TEST(MasterIncarnationTest, EveryProcessHasItsOwn) {
  std::set<std::string> seen;
  for (int i = 0; i < 3; ++i) {
    Master master(MasterEnv{});
    auto handle = master.CreateSession(proto::GraphDef());
    ASSERT_TRUE(handle.ok()) << handle.status();
    // "session_<n>_<incarnation>"
    const std::string incarnation = handle->substr(handle->rfind('_') + 1);
    EXPECT_EQ(incarnation.size(), 24u) << incarnation;
    EXPECT_TRUE(seen.insert(incarnation).second) << incarnation;
  }
}

TEST_F(GraphRegistrationTest, GraphOfAnEarlierProcessOfTheTaskIsRefused) {
  Worker* worker = ps();
  const std::string handle = Register(worker, Partition(kMasterTask, "aaaa"));
  // The incarnation a master kept from before the task restarted.
  absl::Status s = RunGraph(worker, handle, worker->incarnation() + 1);
  EXPECT_TRUE(absl::IsAborted(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("/job:ps/replica:0/task:0"));
  EXPECT_THAT(s.message(),
              HasSubstr("restarted since its graph was registered"));
  EXPECT_THAT(s.message(), HasSubstr("must be registered again"));
  // The graph itself is still there for the current incarnation.
  EXPECT_EQ(RunGraph(worker, handle, worker->incarnation()), absl::OkStatus());
}

TEST_F(GraphRegistrationTest, DeregisteredGraphIsRefusedNamingIt) {
  Worker* worker = ps();
  const std::string handle = Register(worker, Partition(kMasterTask, "aaaa"));
  ASSERT_EQ(Deregister(worker, handle), absl::OkStatus());
  EXPECT_EQ(worker->NumGraphs(), 0);
  absl::Status s = RunGraph(worker, handle, worker->incarnation());
  EXPECT_TRUE(absl::IsAborted(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("has no graph '" + handle + "'"));
}

}  // namespace
}  // namespace distflow
