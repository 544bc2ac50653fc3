// A task whose part of a step has ended dies (or restarts) while another
// task's part still runs: nobody else would abort the step, so the master
// must notice and fail it within seconds, naming the task, and abort the
// step on the tasks still running it. Real gRPC servers on 127.0.0.1.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "distflow/distflow.h"
#include "distributed/rpc/test_cluster.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

// The master probes once a second; a few seconds after the ps goes away is
// ample, and far below the step deadline (an hour) that the step would
// otherwise wait for.
constexpr auto kBound = std::chrono::seconds(8);

// A step with a part on the ps that ends at once (it logs itself in a queue
// there) and a part on the worker that waits on a queue nothing fills, so
// the step runs on after the ps's part has ended.
struct BlockedStep {
  explicit BlockedStep(Scope root)
      : ps_log(ops::FIFOQueue(
            root.WithDevice("/job:ps/task:0").WithOpName("ps_log"),
            DataType::kFloat, PartialTensorShape({}))),
        ps_done(ops::QueueEnqueue(
            root.WithDevice("/job:ps/task:0").WithOpName("ps"), ps_log,
            ops::Const(root.WithDevice("/job:ps/task:0"), 1.0f))),
        ps_parts_ended(ops::QueueSize(
            root.WithDevice("/job:ps/task:0").WithOpName("ps_parts"), ps_log)),
        queue(ops::FIFOQueue(
            root.WithDevice("/job:worker/task:0").WithOpName("queue"),
            DataType::kFloat, PartialTensorShape({}))),
        take(ops::QueueDequeue(
            root.WithDevice("/job:worker/task:0").WithOpName("take"), queue)),
        put(ops::QueueEnqueue(
            root.WithDevice("/job:worker/task:0").WithOpName("put"), queue,
            ops::Const(root.WithDevice("/job:worker/task:0"), 7.0f))),
        size(ops::QueueSize(
            root.WithDevice("/job:worker/task:0").WithOpName("size"), queue)) {}
  Output ps_log;
  Operation ps_done;
  // How many of the ps's parts have ended (on this incarnation of the ps).
  Output ps_parts_ended;
  Output queue;
  Output take;
  Operation put;
  Output size;
};

// How long a loaded machine may take to run the ps's part of a step.
constexpr auto kPsPartBound = std::chrono::seconds(30);

// Whether the ps's log holds `parts` entries within kPsPartBound, asked by
// steps of their own (the session runs steps concurrently).
bool PsPartsEnded(ClientSession* session, const BlockedStep& step,
                  int32_t parts) {
  const auto give_up = std::chrono::steady_clock::now() + kPsPartBound;
  while (std::chrono::steady_clock::now() < give_up) {
    auto ended = session->Run({step.ps_parts_ended});
    if (ended.ok() && (*ended)[0].scalar<int32_t>() >= parts) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Runs `step` on another thread and calls `stop` once the step's part on the
// ps has ended. (A fixed wait was not enough: on a loaded machine the ps
// could go away before the step reached it, which fails the step another
// way.) Returns the step's status and how long it ran on after `stop`. A
// step still running kBound after `stop` is a failure; the worker is then
// killed, which ends it, so that the test fails rather than hangs.
absl::Status RunWhile(TestCluster* cluster, ClientSession* session,
                      const BlockedStep& step,
                      const std::function<void()>& stop,
                      std::chrono::steady_clock::duration* elapsed) {
  // The step's graphs are registered first, by a run that an item lets
  // end, so that the step below reaches the ps at once.
  absl::Status warm = session->RunTargets({step.put});
  if (warm.ok()) warm = session->Run({}, {step.take}, {step.ps_done}).status();
  if (!warm.ok()) return warm;
  auto logged = session->Run({step.ps_parts_ended});
  if (!logged.ok()) return logged.status();
  const int32_t before = (*logged)[0].scalar<int32_t>();
  absl::Status status;
  absl::Notification done;
  std::thread runner([&] {
    status = session->Run({}, {step.take}, {step.ps_done}).status();
    done.Notify();
  });
  EXPECT_TRUE(PsPartsEnded(session, step, before + 1))
      << "the step's part on the ps did not end within "
      << kPsPartBound.count() << " s";
  const auto start = std::chrono::steady_clock::now();
  stop();
  if (!done.WaitForNotificationWithTimeout(absl::FromChrono(kBound))) {
    ADD_FAILURE() << "the step still runs " << kBound.count()
                  << " s after the ps went away";
    cluster->Kill("worker", 0);
  }
  runner.join();
  *elapsed = std::chrono::steady_clock::now() - start;
  return status;
}

// One ps and one worker, and a session on the worker's master for a
// BlockedStep.
class StepWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto created = TestCluster::Create({{"ps", 1}, {"worker", 1}});
    ASSERT_TRUE(created.ok()) << created.status();
    cluster = *std::move(created);
    auto opened = ClientSession::Create(
        root, SessionTarget(cluster->server("worker", 0)));
    ASSERT_TRUE(opened.ok()) << opened.status();
    session = *std::move(opened);
    ps_address = cluster->address("ps", 0);
  }

  Scope root = Scope::NewRootScope();
  BlockedStep step{root};
  std::unique_ptr<TestCluster> cluster;
  std::unique_ptr<ClientSession> session;
  std::string ps_address;
};

TEST_F(StepWatchTest, PsDyingAfterItsPartEndedFailsTheStepNamingIt) {
  std::chrono::steady_clock::duration elapsed;
  absl::Status s = RunWhile(
      cluster.get(), session.get(), step, [&] { cluster->Kill("ps", 0); },
      &elapsed);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(s.message(), HasSubstr(ps_address));
  EXPECT_THAT(s.message(),
              HasSubstr("died or stopped answering after its part of step"));
  EXPECT_LT(elapsed, kBound);

  // The worker's part was aborted, not left waiting: an element queued now
  // stays in the queue for the next dequeue, made by a step of the worker
  // alone.
  ASSERT_EQ(session->RunTargets({step.put}), absl::OkStatus());
  auto size = session->Run({step.size});
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ((*size)[0].scalar<int32_t>(), 1);
  auto out = session->Run({step.take});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 7.0f);
}

TEST_F(StepWatchTest, PsRestartedAfterItsPartEndedFailsTheStepNamingIt) {
  std::chrono::steady_clock::duration elapsed;
  absl::Status s = RunWhile(
      cluster.get(), session.get(), step,
      [&] { ASSERT_EQ(cluster->Restart("ps", 0), absl::OkStatus()); },
      &elapsed);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_THAT(s.message(), HasSubstr(ps_address));
  EXPECT_THAT(s.message(), HasSubstr("restarted after its part of step"));
  EXPECT_LT(elapsed, kBound);

  // The next step registers with the restarted ps and runs: an element
  // queued first is there for its dequeue.
  ASSERT_EQ(session->RunTargets({step.put}), absl::OkStatus());
  auto out = session->Run({}, {step.take}, {step.ps_done});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 7.0f);
}

}  // namespace
}  // namespace distflow
