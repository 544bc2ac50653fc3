// Tensors pushed between two real servers in this process, by the same-host
// path, over TCP, and by the fallback from one to the other; and the sender's
// hold on a pushed tensor ends with the push.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/synchronization/notification.h"
#include "distflow/distflow.h"
#include "distributed/rpc/grpc_remote_worker.h"
#include "distributed/rpc/grpc_server.h"
#include "distributed/rpc/grpc_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/rendezvous.h"

namespace distflow {
namespace {

// A session whose master is the task at `target`.
absl::StatusOr<std::unique_ptr<ClientSession>> SessionOn(
    const Scope& root, const std::string& target) {
  SessionOptions options;
  options.target = target;
  return ClientSession::Create(root, options);
}

struct TwoTasks {
  std::unique_ptr<GrpcServer> ps;
  std::unique_ptr<GrpcServer> worker;
};

// A ps and a worker on 127.0.0.1, each with its own same-host setting.
absl::StatusOr<TwoTasks> StartTwoTasks(bool ps_same_host,
                                       bool worker_same_host) {
  const ClusterMap placeholder = {{"ps", {"127.0.0.1:0"}},
                                  {"worker", {"127.0.0.1:0"}}};
  ServerOptions options;
  TwoTasks tasks;
  options.same_host_transport = ps_same_host;
  auto ps = GrpcServer::Create(placeholder, "ps", 0, options);
  if (!ps.ok()) return ps.status();
  options.same_host_transport = worker_same_host;
  auto worker = GrpcServer::Create(placeholder, "worker", 0, options);
  if (!worker.ok()) return worker.status();
  const ClusterMap cluster = {
      {"ps", {absl::StrCat("127.0.0.1:", (*ps)->port())}},
      {"worker", {absl::StrCat("127.0.0.1:", (*worker)->port())}}};
  (*ps)->SetCluster(cluster);
  (*worker)->SetCluster(cluster);
  tasks.ps = std::move(*ps);
  tasks.worker = std::move(*worker);
  return tasks;
}

// For each n of `sizes`, an int32 range of n elements made on each task is
// doubled on the other (so its bytes cross there) and fetched from there;
// runs `steps` steps (later ones take the paths the first settled on, into
// reused buffers) and checks that every element arrives.
void ExpectRangesCrossBothWays(TwoTasks* tasks,
                               const std::vector<int32_t>& sizes, int steps) {
  Scope root = Scope::NewRootScope();
  Scope ps = root.WithDevice("/job:ps/task:0");
  Scope worker = root.WithDevice("/job:worker/task:0");
  std::vector<Output> fetches;
  std::vector<Tensor> expected;
  for (int32_t n : sizes) {
    fetches.push_back(
        ops::Add(worker, ops::Range(ps, 0, n), ops::Range(ps, 0, n)));
    fetches.push_back(ops::Add(ps, ops::Range(worker, 1, n + 1),
                               ops::Range(worker, 1, n + 1)));
    std::vector<int32_t> to_worker(n), to_ps(n);
    for (int32_t i = 0; i < n; ++i) {
      to_worker[i] = 2 * i;
      to_ps[i] = 2 * (i + 1);
    }
    expected.push_back(Tensor::Vector<int32_t>(to_worker));
    expected.push_back(Tensor::Vector<int32_t>(to_ps));
  }
  auto session = SessionOn(root, tasks->worker->target());
  ASSERT_TRUE(session.ok()) << session.status();
  for (int step = 0; step < steps; ++step) {
    auto out = (*session)->Run(fetches);
    ASSERT_TRUE(out.ok()) << out.status();
    for (size_t i = 0; i < fetches.size(); ++i) {
      EXPECT_TRUE((*out)[i].Equals(expected[i]))
          << "step " << step << ", " << expected[i].NumElements()
          << " elements " << (i % 2 == 0 ? "to the worker" : "to the ps");
    }
  }
}

// (ps offers/reads same-host, worker offers/reads same-host)
class PushPathsTest : public ::testing::TestWithParam<std::tuple<bool, bool>> {
};

// A large tensor made on each side is consumed on the other, twice (the
// second step takes the path the first one settled on), and arrives intact:
// the first and last elements and a run across a 4 MiB chunk boundary.
TEST_P(PushPathsTest, LargeTensorsCrossBothWays) {
  auto tasks = StartTwoTasks(std::get<0>(GetParam()), std::get<1>(GetParam()));
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  constexpr int32_t kElements = (100 << 20) / 4;
  constexpr int32_t kBoundary = (4 << 20) / 4;
  Scope root = Scope::NewRootScope();
  Scope ps = root.WithDevice("/job:ps/task:0");
  Scope worker = root.WithDevice("/job:worker/task:0");
  auto ends = [&](Scope where, Output big) {
    return ops::Concat(
        where,
        {ops::Slice(where, big, Tensor::Vector<int32_t>({0}),
                    Tensor::Vector<int32_t>({1})),
         ops::Slice(where, big, Tensor::Vector<int32_t>({kBoundary - 1}),
                    Tensor::Vector<int32_t>({2})),
         ops::Slice(where, big, Tensor::Vector<int32_t>({kElements - 1}),
                    Tensor::Vector<int32_t>({1}))},
        0);
  };
  // Made on the ps, read on the worker; made on the worker, read on the ps.
  Output to_worker = ends(worker, ops::Range(ps, 0, kElements));
  Output to_ps = ends(ps, ops::Range(worker, 5, kElements + 5));
  auto session = SessionOn(root, tasks->worker->target());
  ASSERT_TRUE(session.ok()) << session.status();
  for (int step = 0; step < 2; ++step) {
    auto out = (*session)->Run({to_worker, to_ps});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT(
        (*out)[0].flat<int32_t>(),
        ::testing::ElementsAre(0, kBoundary - 1, kBoundary, kElements - 1));
    EXPECT_THAT(
        (*out)[1].flat<int32_t>(),
        ::testing::ElementsAre(5, kBoundary + 4, kBoundary + 5, kElements + 4));
  }
}

// Small tensors made on one task and consumed on the other cross as one
// packed transfer each way, gathered from where they lie on the sender
// (graph/partition.cc); every member arrives whole, in every step.
TEST_P(PushPathsTest, PackedTensorsCrossBothWays) {
  auto tasks = StartTwoTasks(std::get<0>(GetParam()), std::get<1>(GetParam()));
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  // 300 KiB, 1 element, 100 KiB and 20 KiB of int32s: one pack of 420 KiB
  // each way, large enough for the same-host path and data connections.
  ExpectRangesCrossBothWays(&*tasks, {76800, 1, 25600, 5120}, /*steps=*/5);
}

INSTANTIATE_TEST_SUITE_P(
    SameHostOnOrOff, PushPathsTest,
    ::testing::Values(std::make_tuple(true, true),
                      std::make_tuple(false, false),
                      // Offered but refused: the fallback to TCP.
                      std::make_tuple(true, false),
                      std::make_tuple(false, true)),
    [](const auto& info) {
      return absl::StrCat("ps_", std::get<0>(info.param) ? "on" : "off",
                          "_worker_", std::get<1>(info.param) ? "on" : "off");
    });

// Tensors whose sizes fall around the huge-page boundaries of their buffers
// (see base/aligned_memory.h: just under and over 1 MiB, a partial last huge
// page that is rounded up, and one that stays on small pages) cross by the
// same-host path both ways, twice (the second time into reused buffers), and
// every element arrives.
TEST(PushPathsTest, TensorsAroundHugePageSizesCrossIntact) {
  auto tasks = StartTwoTasks(/*ps_same_host=*/true, /*worker_same_host=*/true);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  ExpectRangesCrossBothWays(&*tasks,
                            {(1 << 20) / 4 - 1, (1 << 20) / 4 + 3,
                             (3 << 20) / 4 + 5, (5 << 20) / 8 + 7},
                            /*steps=*/2);
}

// A buffer that says when it is freed.
class WatchedBuffer : public TensorBuffer {
 public:
  WatchedBuffer(size_t size, std::atomic<bool>* freed)
      : data_(size, 1.0f), freed_(freed) {}
  ~WatchedBuffer() override { *freed_ = true; }
  void* data() const override { return const_cast<float*>(data_.data()); }
  size_t size() const override { return data_.size() * sizeof(float); }

 private:
  std::vector<float> data_;
  std::atomic<bool>* const freed_;
};

// Polls `flag` for up to 30 s (a bound for a failure only).
bool BecomesTrue(const std::atomic<bool>& flag) {
  for (int i = 0; i < 3000 && !flag; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return flag;
}

// The sender holds a pushed tensor (the receiver reads it from the sender's
// memory) only until the push ends: when the receiver refuses it because its
// step was aborted, and when it takes it.
TEST(PushPathsTest, PushedTensorIsReleasedWhenThePushEnds) {
  for (bool same_host : {true, false}) {
    SCOPED_TRACE(same_host ? "same-host path" : "TCP path");
    auto tasks = StartTwoTasks(same_host, same_host);
    ASSERT_TRUE(tasks.ok()) << tasks.status();
    const std::string address = absl::StrCat("127.0.0.1:", tasks->ps->port());
    auto remote =
        NewGrpcRemoteWorker(NewChannel(address), "/job:ps/replica:0/task:0",
                            address, RpcDeadlines(), PushPaths{same_host});
    const std::string key =
        MakeRendezvousKey("/job:worker/replica:0/task:0/device:CPU:0",
                          "/job:ps/replica:0/task:0/device:CPU:0", "big:0");
    constexpr int64_t kAborted = 11, kRunning = 12;
    proto::AbortStepRequest abort;
    abort.set_step_id(kAborted);
    abort.set_code(static_cast<int>(absl::StatusCode::kCancelled));
    abort.set_message("the test aborted it");
    proto::AbortStepResponse abort_response;
    tasks->ps->worker()->AbortStepAsync(&abort, &abort_response,
                                        [](const absl::Status&) {});
    for (int64_t step : {kAborted, kRunning}) {
      std::atomic<bool> freed{false};
      absl::Notification pushed;
      absl::Status status;
      {
        constexpr int64_t kFloats = 1 << 20;
        Tensor value(DataType::kFloat, TensorShape({kFloats}),
                     std::make_shared<WatchedBuffer>(kFloats, &freed));
        remote->PushTensorAsync(step, key, value, [&](const absl::Status& s) {
          status = s;
          pushed.Notify();
        });
      }
      ASSERT_TRUE(pushed.WaitForNotificationWithTimeout(absl::Seconds(10)));
      EXPECT_EQ(status.code(), step == kAborted ? absl::StatusCode::kAborted
                                                : absl::StatusCode::kOk)
          << status;
      EXPECT_TRUE(BecomesTrue(freed)) << "step " << step;
    }
    // Ends the step that the last push started on the ps.
    proto::AbortStepRequest end;
    end.set_step_id(kRunning);
    tasks->ps->worker()->AbortStepAsync(&end, &abort_response,
                                        [](const absl::Status&) {});
  }
}

}  // namespace
}  // namespace distflow
