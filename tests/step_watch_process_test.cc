// A ps task in its own process (`distflow server`) is killed with SIGKILL
// after its part of a step has ended, while the worker's part (in this
// process, which also runs the master) still waits: the step must fail
// within seconds with UNAVAILABLE naming the ps's address, not wait for the
// step deadline, and the worker must be free for the next step.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "distflow/distflow.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "subprocess.h"

namespace distflow {
namespace {

using ::distflow::testing::PickFreePort;
using ::distflow::testing::Subprocess;
using ::testing::HasSubstr;

// The master probes once a second; the step deadline it would otherwise
// wait for is an hour.
constexpr auto kBound = std::chrono::seconds(8);
// For the ps process to start (generous: the machine may be loaded).
constexpr auto kStartTimeout = std::chrono::seconds(60);

TEST(StepWatchProcessTest, PsKilledAfterItsPartEndedFailsTheStepNamingIt) {
  const std::string ps_address = absl::StrCat("127.0.0.1:", PickFreePort());
  const std::string worker_address = absl::StrCat("127.0.0.1:", PickFreePort());
  auto cluster = ClusterSpec::FromHostLists(ps_address, worker_address);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Subprocess ps({absl::StrCat(DISTFLOW_BIN_DIR, "/distflow"), "server",
                 "--job_name=ps", "--task_index=0", "--ps_hosts=" + ps_address,
                 "--worker_hosts=" + worker_address});
  ASSERT_TRUE(ps.started());
  auto server = Server::Create(*cluster, "worker", 0);
  ASSERT_TRUE(server.ok()) << server.status();

  // The ps's part ends at once; the worker's waits on a queue nothing fills.
  Scope root = Scope::NewRootScope();
  Scope on_worker = root.WithDevice("/job:worker/task:0");
  Operation ps_done = ops::NoOp(root.WithDevice("/job:ps/task:0"));
  Output queue = ops::FIFOQueue(on_worker.WithOpName("queue"), DataType::kFloat,
                                PartialTensorShape({}));
  Output take = ops::QueueDequeue(on_worker.WithOpName("take"), queue);
  Operation put = ops::QueueEnqueue(on_worker.WithOpName("put"), queue,
                                    ops::Const(on_worker, 7.0f));
  SessionOptions options;
  options.target = (*server)->target();
  auto session = ClientSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();

  // The ps is up once a step of its own runs.
  const auto start_deadline = std::chrono::steady_clock::now() + kStartTimeout;
  absl::Status up;
  do {
    up = (*session)->RunTargets({ps_done});
    if (!up.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (!up.ok() && std::chrono::steady_clock::now() < start_deadline);
  ASSERT_EQ(up, absl::OkStatus()) << ps.Output();

  absl::Status status;
  absl::Notification done;
  const auto start = std::chrono::steady_clock::now();
  std::thread runner([&] {
    status = (*session)->Run({}, {take}, {ps_done}).status();
    done.Notify();
  });
  // Long enough for the ps's part to end, short of the master's first probe.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ps.Kill();
  if (!done.WaitForNotificationWithTimeout(absl::FromChrono(kBound))) {
    ADD_FAILURE() << "the step still runs " << kBound.count()
                  << " s after the ps was killed";
    // Ends the step (the worker aborts every step it runs) so that the test
    // fails rather than hangs.
    server->reset();
  }
  runner.join();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_NE(*server, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(status.message(), HasSubstr(ps_address));
  EXPECT_THAT(status.message(), HasSubstr("died after its part of step"));
  EXPECT_LT(elapsed, kBound);

  // The worker's part was aborted, not left waiting on the queue: an
  // element queued now is there for a step of the worker alone.
  ASSERT_EQ((*session)->RunTargets({put}), absl::OkStatus());
  auto out = (*session)->Run({take});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 7.0f);
}

}  // namespace
}  // namespace distflow
