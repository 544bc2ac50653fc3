// FIFO queues in a real local session: order, blocking dequeue, close and
// step cancellation.
#include <memory>
#include <vector>

#include "distflow/ops.h"
#include "gtest/gtest.h"
#include "kernels/async_run_test_util.h"
#include "kernels/kernel_test_util.h"

namespace distflow {
namespace {

using test::AsyncRun;
using test::HasError;
using test::kStaysBlocked;
using test::kWakesWithin;

struct QueueFixture {
  Scope root = Scope::NewRootScope();
  Output q =
      ops::FIFOQueue(root, DataType::kInt64, PartialTensorShape({}), "tokens");
  Output element = ops::Placeholder(root, DataType::kInt64);
  Operation enqueue = ops::QueueEnqueue(root, q, element);
  Operation enqueue_many = ops::QueueEnqueueMany(root, q, element);
  Output dequeue = ops::QueueDequeue(root, q);
  Output size = ops::QueueSize(root, q);
  Operation close = ops::QueueClose(root, q);
  std::unique_ptr<ClientSession> session = ClientSession::Create(root).value();

  absl::Status Enqueue(const Tensor& t, bool many = false) {
    return session->Run({{element, t}}, {}, {many ? enqueue_many : enqueue})
        .status();
  }
  absl::StatusOr<int64_t> Dequeue() {
    auto out = session->Run({dequeue});
    if (!out.ok()) return out.status();
    return (*out)[0].scalar<int64_t>();
  }
  int Size() { return session->Run({size}).value()[0].scalar<int32_t>(); }
};

TEST(QueueTest, DequeuesInEnqueueOrder) {
  QueueFixture f;
  ASSERT_TRUE(f.Enqueue(Tensor::Scalar<int64_t>(7)).ok());
  ASSERT_TRUE(
      f.Enqueue(Tensor::Vector<int64_t>({8, 9, 10}), /*many=*/true).ok());
  EXPECT_EQ(f.Size(), 4);
  for (int64_t want : {7, 8, 9, 10}) {
    auto got = f.Dequeue();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, want);
  }
  EXPECT_EQ(f.Size(), 0);
}

TEST(QueueTest, DequeueWaitsForAnElement) {
  QueueFixture f;
  AsyncRun dequeue(f.session.get(), {}, {f.dequeue});
  EXPECT_FALSE(dequeue.FinishesWithin(kStaysBlocked));
  ASSERT_TRUE(f.Enqueue(Tensor::Scalar<int64_t>(42)).ok());
  ASSERT_TRUE(dequeue.FinishesWithin(kWakesWithin));
  auto out = dequeue.Result();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<int64_t>(), 42);
  EXPECT_EQ(f.Size(), 0);
}

TEST(QueueTest, CloseWakesWaitersButKeepsQueuedElements) {
  QueueFixture f;
  {
    AsyncRun dequeue(f.session.get(), {}, {f.dequeue});
    EXPECT_FALSE(dequeue.FinishesWithin(kStaysBlocked));
    ASSERT_TRUE(f.session->RunTargets({f.close}).ok());
    ASSERT_TRUE(dequeue.FinishesWithin(kWakesWithin));
    EXPECT_TRUE(HasError(dequeue.Result().status(),
                         absl::StatusCode::kOutOfRange,
                         {"queue 'tokens'", "closed and empty"}));
  }
  EXPECT_TRUE(HasError(f.Enqueue(Tensor::Scalar<int64_t>(1)),
                       absl::StatusCode::kCancelled, {"'tokens'", "closed"}));

  QueueFixture g;
  ASSERT_TRUE(g.Enqueue(Tensor::Scalar<int64_t>(5)).ok());
  ASSERT_TRUE(g.session->RunTargets({g.close}).ok());
  auto first = g.Dequeue();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, 5);
  EXPECT_EQ(g.Dequeue().status().code(), absl::StatusCode::kOutOfRange);
}

// A dequeue whose step is aborted leaves the queue: it does not take the
// next element.
TEST(QueueTest, AbortedStepWakesAWaitingDequeueWithoutLosingElements) {
  QueueFixture f;
  Output other =
      ops::FIFOQueue(f.root, DataType::kFloat, PartialTensorShape(), "other");
  Output other_dequeue = ops::QueueDequeue(f.root, other);
  Operation close_other = ops::QueueClose(f.root, other);
  AsyncRun step(f.session.get(), {}, {f.dequeue, other_dequeue});
  EXPECT_FALSE(step.FinishesWithin(kStaysBlocked));
  ASSERT_TRUE(f.session->RunTargets({close_other}).ok());
  ASSERT_TRUE(step.FinishesWithin(kWakesWithin));
  EXPECT_TRUE(HasError(step.Result().status(), absl::StatusCode::kOutOfRange,
                       {"'other'"}));
  ASSERT_TRUE(f.Enqueue(Tensor::Scalar<int64_t>(3)).ok());
  EXPECT_EQ(f.Size(), 1);
}

TEST(QueueTest, ElementOfAnotherShapeIsAnErrorNamingTheQueue) {
  QueueFixture f;
  EXPECT_TRUE(HasError(f.Enqueue(Tensor::Vector<int64_t>({1, 2})),
                       absl::StatusCode::kInvalidArgument,
                       {"queue 'tokens'", "int64[2]"}));
  EXPECT_TRUE(HasError(f.Enqueue(Tensor::Scalar<int64_t>(1), /*many=*/true),
                       absl::StatusCode::kInvalidArgument,
                       {"first dimension"}));
}

}  // namespace
}  // namespace distflow
