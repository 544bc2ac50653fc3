// Staleness barriers in a real local session: a worker too far ahead waits
// for the slowest, and is released by its progress or its retirement.
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

struct BarrierFixture {
  explicit BarrierFixture(int64_t max_staleness)
      : barrier(ops::StalenessBarrier(root, 2, max_staleness, "b")),
        advance0(ops::StalenessBarrierAdvance(root, barrier, 0)),
        advance1(ops::StalenessBarrierAdvance(root, barrier, 1)),
        retire1(ops::StalenessBarrierRetire(root, barrier, 1)),
        steps(ops::StalenessBarrierSteps(root, barrier)),
        session(ClientSession::Create(root).value()) {}

  int64_t Advance(const Output& advance) {
    return session->Run({advance}).value()[0].scalar<int64_t>();
  }

  Scope root = Scope::NewRootScope();
  Output barrier, advance0, advance1;
  Operation retire1;
  Output steps;
  std::unique_ptr<ClientSession> session;
};

TEST(StalenessBarrierTest, HoldsAWorkerMoreThanMaxStalenessAhead) {
  BarrierFixture f(/*max_staleness=*/1);
  EXPECT_EQ(f.Advance(f.advance0), 1);  // 1 ahead of worker 1: allowed
  {
    AsyncRun second(f.session.get(), {}, {f.advance0});  // would be 2 ahead
    EXPECT_FALSE(second.FinishesWithin(kStaysBlocked));
    EXPECT_EQ(f.Advance(f.advance1), 1);
    ASSERT_TRUE(second.FinishesWithin(kWakesWithin));
    auto out = second.Result();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].scalar<int64_t>(), 2);
  }
  auto steps = f.session->Run({f.steps});
  ASSERT_TRUE(steps.ok()) << steps.status();
  EXPECT_TRUE(test::TensorsEqual<int64_t>((*steps)[0],
                                          Tensor::Vector<int64_t>({2, 1})));
}

TEST(StalenessBarrierTest, ZeroStalenessIsABarrierPerStep) {
  BarrierFixture f(/*max_staleness=*/0);
  AsyncRun first(f.session.get(), {}, {f.advance0});
  EXPECT_FALSE(first.FinishesWithin(kStaysBlocked));
  EXPECT_EQ(f.Advance(f.advance1), 1);
  ASSERT_TRUE(first.FinishesWithin(kWakesWithin));
  EXPECT_TRUE(first.Result().ok());
}

TEST(StalenessBarrierTest, RetiringTheSlowestReleasesTheOthers) {
  BarrierFixture f(/*max_staleness=*/0);
  AsyncRun first(f.session.get(), {}, {f.advance0});
  EXPECT_FALSE(first.FinishesWithin(kStaysBlocked));
  ASSERT_TRUE(f.session->RunTargets({f.retire1}).ok());
  ASSERT_TRUE(first.FinishesWithin(kWakesWithin));
  EXPECT_TRUE(first.Result().ok());
  EXPECT_EQ(f.Advance(f.advance0), 2);  // worker 1 no longer counts
}

TEST(StalenessBarrierTest, UnknownWorkerIsAnErrorNamingTheBarrier) {
  BarrierFixture f(/*max_staleness=*/1);
  Output bad = ops::StalenessBarrierAdvance(f.root, f.barrier, 5);
  EXPECT_TRUE(HasError(f.session->Run({bad}).status(),
                       absl::StatusCode::kInvalidArgument,
                       {"worker 5", "staleness barrier 'b'", "0 to 1"}));
}

}  // namespace
}  // namespace distflow
