// A ps task in its own process (`distflow server`) is killed with SIGKILL
// after its part of a step has ended, while the worker's part (in this
// process, which also runs the master) still waits: the step must fail
// within seconds with UNAVAILABLE naming the ps's address, not wait for the
// step deadline, and the worker must be free for the next step. A ps frozen
// with SIGSTOP at that point fails the step too, once gRPC's keepalive finds
// it silent.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "distflow/distflow.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps_process.h"
#include "subprocess.h"

namespace distflow {
namespace {

using ::distflow::testing::PsProcessAndWorker;
using ::distflow::testing::SessionOnceThePsIsUp;
using ::distflow::testing::StartPsProcessAndWorker;
using ::testing::HasSubstr;

// The master probes once a second; the step deadline it would otherwise
// wait for is an hour.
constexpr auto kBound = std::chrono::seconds(8);
// For a frozen ps: the keepalive's bound, with room for a loaded machine.
constexpr auto kFrozenBound = std::chrono::seconds(25);
// For the ps process to start (generous: the machine may be loaded).
constexpr auto kStartTimeout = std::chrono::seconds(60);

// A ps process and, in this process, the worker (with the master) and a
// session whose step has a part on the ps that ends at once and a part on
// the worker that waits on a queue until something is put in it.
class StepWatchProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StartPsProcessAndWorker(&tasks_);
    if (HasFatalFailure()) return;

    Scope root = Scope::NewRootScope();
    Scope on_worker = root.WithDevice("/job:worker/task:0");
    Scope on_ps = root.WithDevice("/job:ps/task:0");
    // The ps's part of a step logs itself in a queue there, so that a test
    // can see it has ended.
    Output ps_log = ops::FIFOQueue(on_ps.WithOpName("ps_log"),
                                   DataType::kFloat, PartialTensorShape({}));
    ps_done_ = ops::QueueEnqueue(on_ps.WithOpName("ps"), ps_log,
                                 ops::Const(on_ps, 1.0f));
    ps_parts_ended_ = ops::QueueSize(on_ps.WithOpName("ps_parts"), ps_log);
    Output queue = ops::FIFOQueue(on_worker.WithOpName("queue"),
                                  DataType::kFloat, PartialTensorShape({}));
    take_ = ops::QueueDequeue(on_worker.WithOpName("take"), queue);
    put_ = ops::QueueEnqueue(on_worker.WithOpName("put"), queue,
                             ops::Const(on_worker, 7.0f));
    // The ps is up once a step with a part there runs.
    SessionOnceThePsIsUp(root, tasks_, ps_done_, &session_);
  }

  PsProcessAndWorker tasks_;
  Operation ps_done_;
  Output ps_parts_ended_;

  // The number of the ps's parts that have ended, or -1 if it cannot be read.
  int32_t PsPartsEnded() {
    auto ended = session_->Run({ps_parts_ended_});
    return ended.ok() ? (*ended)[0].scalar<int32_t>() : -1;
  }

  // Runs, on step_thread_, a step with the ps's part and the worker's part
  // that waits on the queue, and returns once the ps's part has ended (a
  // fixed wait was not enough: on a loaded machine the ps could be stopped
  // before the step reached it, which fails the step another way). The
  // step's status goes to step_status_ when step_done_ is notified.
  void StartStep() {
    // The step's graphs are registered first, by a run that an item lets
    // end, so that the step below reaches the ps at once.
    ASSERT_EQ(session_->RunTargets({put_}), absl::OkStatus());
    auto warm = session_->Run({}, {take_}, {ps_done_});
    ASSERT_TRUE(warm.ok()) << warm.status();
    const int32_t before = PsPartsEnded();
    ASSERT_GE(before, 1);
    step_thread_ = std::thread([this] {
      step_status_ = session_->Run({}, {take_}, {ps_done_}).status();
      step_done_.Notify();
    });
    const auto give_up = std::chrono::steady_clock::now() + kStartTimeout;
    while (PsPartsEnded() <= before &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_GT(PsPartsEnded(), before)
        << "the step's part on the ps did not end within "
        << kStartTimeout.count() << " s";
  }

  Output take_;
  Operation put_;
  std::unique_ptr<ClientSession> session_;
  std::thread step_thread_;
  absl::Status step_status_;
  absl::Notification step_done_;
};

TEST_F(StepWatchProcessTest, PsKilledAfterItsPartEndedFailsTheStepNamingIt) {
  ASSERT_NO_FATAL_FAILURE(StartStep());
  const auto start = std::chrono::steady_clock::now();
  tasks_.ps->Kill();
  if (!step_done_.WaitForNotificationWithTimeout(absl::FromChrono(kBound))) {
    ADD_FAILURE() << "the step still runs " << kBound.count()
                  << " s after the ps was killed";
    // Ends the step (the worker aborts every step it runs) so that the test
    // fails rather than hangs.
    tasks_.worker.reset();
  }
  step_thread_.join();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_NE(tasks_.worker, nullptr);
  EXPECT_EQ(step_status_.code(), absl::StatusCode::kUnavailable)
      << step_status_;
  EXPECT_THAT(step_status_.message(), HasSubstr(tasks_.ps_address));
  EXPECT_THAT(step_status_.message(),
              HasSubstr("died or stopped answering after its part of step"));
  EXPECT_LT(elapsed, kBound);

  // The worker's part was aborted, not left waiting on the queue: an
  // element queued now is there for a step of the worker alone.
  ASSERT_EQ(session_->RunTargets({put_}), absl::OkStatus());
  auto out = session_->Run({take_});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 7.0f);
}

// A finished task that does not answer (frozen with SIGSTOP: its sockets
// stay open) is asked for its status with the control deadline (30 s); the
// step must not wait for that answer once its own parts have ended.
TEST_F(StepWatchProcessTest, UnansweredProbeDoesNotHoldUpAStepThatEnds) {
  ASSERT_NO_FATAL_FAILURE(StartStep());
  tasks_.ps->Pause();
  // Past the master's first probe, which now waits on the frozen ps.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(session_->RunTargets({put_}), absl::OkStatus());
  const bool ended =
      step_done_.WaitForNotificationWithTimeout(absl::Seconds(5));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  tasks_.ps->Resume();
  step_thread_.join();
  EXPECT_TRUE(ended) << "the step waited for the probe of the frozen ps";
  EXPECT_EQ(step_status_, absl::OkStatus());
  EXPECT_LT(elapsed, std::chrono::seconds(5));
}

// A ps frozen (SIGSTOP) after its part of a step ended, while the worker's
// part still waits: the step fails once the connection's keepalive finds
// the ps silent, naming its address, and does not wait for the step
// deadline.
TEST_F(StepWatchProcessTest, FrozenPsFailsTheStepNamingIt) {
  ASSERT_NO_FATAL_FAILURE(StartStep());
  tasks_.ps->Pause();
  const auto start = std::chrono::steady_clock::now();
  const bool ended =
      step_done_.WaitForNotificationWithTimeout(absl::Seconds(40));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  tasks_.ps->Resume();
  if (!ended) {
    ASSERT_EQ(session_->RunTargets({put_}), absl::OkStatus());
  }
  step_thread_.join();
  ASSERT_TRUE(ended) << "the step still waited 40 s after the ps froze";
  EXPECT_TRUE(absl::IsUnavailable(step_status_)) << step_status_;
  EXPECT_THAT(step_status_.message(), HasSubstr(tasks_.ps_address));
  EXPECT_THAT(step_status_.message(), HasSubstr("stopped answering"));
  // gRPC's keepalive (a ping every 2 s, 5 s to answer) closes the silent
  // connection, and the next probe fails: 12 s on an idle machine.
  EXPECT_LT(elapsed, kFrozenBound);
}

}  // namespace
}  // namespace distflow
