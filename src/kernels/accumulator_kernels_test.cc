// Gradient accumulators in a real local session: averaging, stale gradients,
// blocking takes woken by gradients, by closing and by step cancellation.
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

// A dense float accumulator of shape [2] with feedable apply and take ops.
struct DenseFixture {
  Scope root = Scope::NewRootScope();
  Output acc = ops::ConditionalAccumulator(root, DataType::kFloat,
                                           PartialTensorShape({2}), "acc");
  Output step = ops::Placeholder(root, DataType::kInt64);
  Output grad = ops::Placeholder(root, DataType::kFloat);
  Operation apply = ops::AccumulatorApplyGradient(root, acc, step, grad);
  Output num_required = ops::Placeholder(root, DataType::kInt32);
  Output take = ops::AccumulatorTakeGradient(root, acc, num_required);
  Output count = ops::AccumulatorNumAccumulated(root, acc);
  Output new_step = ops::Placeholder(root, DataType::kInt64);
  Operation set_step = ops::AccumulatorSetGlobalStep(root, acc, new_step);
  Operation close = ops::AccumulatorClose(root, acc);
  std::unique_ptr<ClientSession> session = ClientSession::Create(root).value();

  absl::Status Apply(int64_t local_step, std::vector<float> g) {
    return session
        ->Run({{step, Tensor::Scalar<int64_t>(local_step)},
               {grad, Tensor::Vector<float>(g)}},
              {}, {apply})
        .status();
  }
  int Count() { return session->Run({count}).value()[0].scalar<int32_t>(); }
  absl::StatusOr<std::vector<Tensor>> Take(int32_t n) {
    return session->Run({{num_required, Tensor::Scalar<int32_t>(n)}}, {take});
  }
  absl::Status SetStep(int64_t s) {
    return session
        ->Run({{new_step, Tensor::Scalar<int64_t>(s)}}, {}, {set_step})
        .status();
  }
};

TEST(AccumulatorTest, TakeAveragesTheGradientsAndStartsANewRound) {
  DenseFixture f;
  ASSERT_TRUE(f.Apply(0, {1, 2}).ok());
  ASSERT_TRUE(f.Apply(0, {3, 10}).ok());
  EXPECT_EQ(f.Count(), 2);
  auto avg = f.Take(2);
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_TRUE(
      test::TensorsEqual<float>((*avg)[0], Tensor::Vector<float>({2, 6})));
  EXPECT_EQ(f.Count(), 0);
  // The take advanced the accumulator to step 1: step 0 is stale now.
  ASSERT_TRUE(f.Apply(0, {100, 100}).ok());
  EXPECT_EQ(f.Count(), 0);
  ASSERT_TRUE(f.Apply(1, {4, 4}).ok());
  avg = f.Take(1);
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_TRUE(
      test::TensorsEqual<float>((*avg)[0], Tensor::Vector<float>({4, 4})));
}

TEST(AccumulatorTest, DropsGradientsOlderThanTheGlobalStep) {
  DenseFixture f;
  ASSERT_TRUE(f.SetStep(5).ok());
  ASSERT_TRUE(f.Apply(4, {100, 100}).ok());  // stale: no error, dropped
  EXPECT_EQ(f.Count(), 0);
  ASSERT_TRUE(f.Apply(5, {1, 1}).ok());
  ASSERT_TRUE(f.Apply(7, {3, 3}).ok());  // ahead: counted
  auto avg = f.Take(2);
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_TRUE(
      test::TensorsEqual<float>((*avg)[0], Tensor::Vector<float>({2, 2})));
}

TEST(AccumulatorTest, TakeWaitsUntilEnoughGradientsArrive) {
  DenseFixture f;
  AsyncRun take(f.session.get(), {{f.num_required, Tensor::Scalar<int32_t>(2)}},
                {f.take});
  EXPECT_FALSE(take.FinishesWithin(kStaysBlocked));
  ASSERT_TRUE(f.Apply(0, {2, 4}).ok());
  EXPECT_FALSE(take.FinishesWithin(kStaysBlocked));
  ASSERT_TRUE(f.Apply(0, {4, 8}).ok());
  ASSERT_TRUE(take.FinishesWithin(kWakesWithin));
  auto avg = take.Result();
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_TRUE(
      test::TensorsEqual<float>((*avg)[0], Tensor::Vector<float>({3, 6})));
}

TEST(AccumulatorTest, CloseFailsAWaitingTakeAndSetGlobalStepReopens) {
  DenseFixture f;
  AsyncRun take(f.session.get(), {{f.num_required, Tensor::Scalar<int32_t>(1)}},
                {f.take});
  EXPECT_FALSE(take.FinishesWithin(kStaysBlocked));
  ASSERT_TRUE(f.session->RunTargets({f.close}).ok());
  ASSERT_TRUE(take.FinishesWithin(kWakesWithin));
  EXPECT_TRUE(HasError(take.Result().status(), absl::StatusCode::kCancelled,
                       {"accumulator 'acc'", "closed"}));
  // Closed: later takes fail at once; gradients are still accepted.
  ASSERT_TRUE(f.Apply(0, {1, 1}).ok());
  EXPECT_TRUE(
      HasError(f.Take(1).status(), absl::StatusCode::kCancelled, {"closed"}));
  ASSERT_TRUE(f.SetStep(0).ok());
  auto avg = f.Take(1);
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_TRUE(
      test::TensorsEqual<float>((*avg)[0], Tensor::Vector<float>({1, 1})));
}

// A take whose step is aborted (here: another op of the step fails) ends with
// the step and leaves no waiter behind to steal later gradients.
TEST(AccumulatorTest, AbortedStepWakesAWaitingTake) {
  DenseFixture f;
  Output q = ops::FIFOQueue(f.root, DataType::kInt64, PartialTensorShape({}));
  Output dequeue = ops::QueueDequeue(f.root, q);
  Operation close_q = ops::QueueClose(f.root, q);
  AsyncRun step(f.session.get(), {{f.num_required, Tensor::Scalar<int32_t>(1)}},
                {f.take, dequeue});
  EXPECT_FALSE(step.FinishesWithin(kStaysBlocked));
  ASSERT_TRUE(f.session->RunTargets({close_q}).ok());  // fails the dequeue
  ASSERT_TRUE(step.FinishesWithin(kWakesWithin));
  EXPECT_TRUE(HasError(step.Result().status(), absl::StatusCode::kOutOfRange,
                       {"closed"}));
  ASSERT_TRUE(f.Apply(0, {5, 6}).ok());
  EXPECT_EQ(f.Count(), 1);
  auto avg = f.Take(1);
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_TRUE(
      test::TensorsEqual<float>((*avg)[0], Tensor::Vector<float>({5, 6})));
}

TEST(AccumulatorTest, BadInputIsAnErrorNamingTheAccumulator) {
  DenseFixture f;
  EXPECT_TRUE(HasError(f.Apply(0, {1, 2, 3}),
                       absl::StatusCode::kInvalidArgument,
                       {"accumulator 'acc'", "[3]", "[2]"}));
  EXPECT_TRUE(HasError(f.Take(0).status(), absl::StatusCode::kInvalidArgument,
                       {"num_required >= 1", "'acc'"}));
  // Another program declaring "acc" differently.
  Output other = ops::ConditionalAccumulator(f.root, DataType::kFloat,
                                             PartialTensorShape({3}), "acc");
  Output count = ops::AccumulatorNumAccumulated(f.root, other);
  EXPECT_TRUE(HasError(f.session->Run({count}).status(),
                       absl::StatusCode::kInvalidArgument,
                       {"[3]", "already exists", "shared_name"}));
}

// Double gradients, and rounds of two and three: each round averages only its
// own gradients (the sum of a round taken is not carried into the next).
// Whatever the number of gradients (the accumulator holds the first few and
// sums any more as they come), float gradients are summed in double, in the
// order they came: 1e8 + 1 - 1e8 is 1, where a float sum would lose the 1.
TEST(AccumulatorTest, FloatGradientsAreSummedInDoubleWhateverTheirNumber) {
  DenseFixture f;
  const std::vector<std::vector<float>> gradients = {
      {1e8f, 3}, {1, 5}, {-1e8f, 7}, {0.5f, 1}, {0.25f, 2}, {3, 4}};
  for (int n = 2; n <= 6; ++n) {
    const int64_t round = n - 2;  // each take advances the global step
    std::vector<double> sum(2, 0.0);
    for (int k = 0; k < n; ++k) {
      ASSERT_TRUE(f.Apply(round, gradients[k]).ok());
      for (int i = 0; i < 2; ++i) sum[i] += gradients[k][i];
    }
    auto avg = f.Take(n);
    ASSERT_TRUE(avg.ok()) << avg.status();
    const Tensor want = Tensor::Vector<float>(
        {static_cast<float>(sum[0] / n), static_cast<float>(sum[1] / n)});
    EXPECT_TRUE(test::TensorsEqual<float>((*avg)[0], want))
        << n << " gradients: " << (*avg)[0].DebugString() << " against "
        << want.DebugString();
  }
}

TEST(AccumulatorTest, Float64RoundsAverageOnlyTheirOwnGradients) {
  Scope root = Scope::NewRootScope();
  Output acc = ops::ConditionalAccumulator(root, DataType::kDouble,
                                           PartialTensorShape({2}), "acc64");
  Output step = ops::Placeholder(root, DataType::kInt64);
  Output grad = ops::Placeholder(root, DataType::kDouble);
  Operation apply = ops::AccumulatorApplyGradient(root, acc, step, grad);
  Output take = ops::AccumulatorTakeGradient(root, acc, 2);
  auto session = ClientSession::Create(root).value();
  auto apply_at = [&](int64_t s, std::vector<double> g) {
    return session
        ->Run({{step, Tensor::Scalar<int64_t>(s)},
               {grad, Tensor::Vector<double>(g)}},
              {}, {apply})
        .status();
  };
  ASSERT_TRUE(apply_at(0, {1e-3, 3}).ok());
  ASSERT_TRUE(apply_at(0, {2e-3, 5}).ok());
  auto avg = session->Run({take});
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_TRUE(test::TensorsEqual<double>((*avg)[0],
                                         Tensor::Vector<double>({1.5e-3, 4})));
  ASSERT_TRUE(apply_at(1, {7, -1}).ok());
  ASSERT_TRUE(apply_at(0, {100, 100}).ok());  // stale: dropped
  ASSERT_TRUE(apply_at(1, {9, 1}).ok());
  ASSERT_TRUE(apply_at(1, {-1, 3}).ok());  // a third before the take
  avg = session->Run({take});
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_TRUE(
      test::TensorsEqual<double>((*avg)[0], Tensor::Vector<double>({5, 1})));
}

TEST(SparseAccumulatorTest, AveragesRowsOverTheNumberOfGradients) {
  Scope root = Scope::NewRootScope();
  Output acc = ops::SparseConditionalAccumulator(
      root, DataType::kFloat, PartialTensorShape({3, 2}), "emb");
  Operation a = ops::SparseAccumulatorApplyGradient(
      root, acc, int64_t{0}, Tensor::Vector<int64_t>({0, 2}),
      Tensor::Matrix<float>({{1, 2}, {3, 4}}));
  Operation b = ops::SparseAccumulatorApplyGradient(
      root, acc, int64_t{0}, Tensor::Vector<int32_t>({2, 2}),
      Tensor::Matrix<float>({{5, 6}, {1, 0}}));
  Operation bad = ops::SparseAccumulatorApplyGradient(
      root, acc, int64_t{0}, Tensor::Vector<int64_t>({3}),
      Tensor::Matrix<float>({{1, 1}}));
  IndexedSlices avg = ops::SparseAccumulatorTakeGradient(root, acc, 2);
  auto session = ClientSession::Create(root).value();
  ASSERT_TRUE(session->RunTargets({a}).ok());
  ASSERT_TRUE(session->RunTargets({b}).ok());
  EXPECT_TRUE(HasError(session->RunTargets({bad}),
                       absl::StatusCode::kInvalidArgument,
                       {"index 3", "[0, 3)", "'emb'"}));
  auto out = session->Run({avg.indices, avg.values, avg.dense_shape});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(
      test::TensorsEqual<int64_t>((*out)[0], Tensor::Vector<int64_t>({0, 2})));
  // Row 2 received {3,4} + {5,6} + {1,0} over two gradients.
  EXPECT_TRUE(test::TensorsEqual<float>(
      (*out)[1], Tensor::Matrix<float>({{0.5f, 1}, {4.5f, 5}})));
  EXPECT_TRUE(
      test::TensorsEqual<int32_t>((*out)[2], Tensor::Vector<int32_t>({3, 2})));
}

}  // namespace
}  // namespace distflow
