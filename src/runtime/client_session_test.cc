#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "distflow/ops.h"
#include "distflow/scope.h"
#include "distflow/session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<ClientSession> NewClient(const Scope& scope) {
  auto session = ClientSession::Create(scope);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(*session) : nullptr;
}

TEST(ClientSessionTest, OpsAddedAfterCreateAreShippedOnRun) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root.WithOpName("a"), 3);
  auto session = NewClient(root);
  ASSERT_TRUE(session);
  auto out = session->Run({a});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<int32_t>(), 3);

  // Built after the first Run: the session has never seen it until this Run.
  auto b = ops::Mul(root.WithOpName("b"), a, 5);
  out = session->Run({b, a});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<int32_t>(), 15);
  EXPECT_EQ((*out)[1].scalar<int32_t>(), 3);

  // And again, depending on both older and newer nodes.
  auto c = ops::Add(root.WithOpName("c"), b, a);
  out = session->Run({c});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<int32_t>(), 18);
}

TEST(ClientSessionTest, CreateFailsWithTheScopesBuildError) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, {{1, 2, 3, 4}});
  auto b = ops::Const(root, {{1}, {2}, {3}});
  ops::MatMul(root.WithOpName("bad_product"), a, b);
  ASSERT_FALSE(root.ok());
  auto session = ClientSession::Create(root);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status(), root.status());
  EXPECT_THAT(session.status().message(), HasSubstr("bad_product"));
}

TEST(ClientSessionTest, RunFailsWithABuildErrorMadeAfterCreate) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, {{1, 2, 3, 4}});
  auto session = NewClient(root);
  ASSERT_TRUE(session);
  ops::MatMul(root.WithOpName("late_bad_product"), a, a);
  ASSERT_FALSE(root.ok());
  auto out = session->Run({a});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status(), root.status());
}

TEST(ClientSessionTest, FetchesWithFeedsOfOutputs) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, {-1, 2});
  auto scale = ops::Placeholder(root.WithOpName("scale"), DataType::kFloat);
  auto y = ops::Mul(root.WithOpName("y"), x, scale);
  auto session = NewClient(root);
  ASSERT_TRUE(session);
  auto out = session->Run({{x, Tensor::Matrix<float>({{1, 2}, {3, 4}})},
                           {scale, Tensor::Scalar(10.0f)}},
                          {y});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE((*out)[0].Equals(Tensor::Matrix<float>({{10, 20}, {30, 40}})))
      << (*out)[0];

  // Feeding an intermediate value cuts off what is behind it: x and scale need
  // no feed.
  out = session->Run({{y, Tensor::Matrix<float>({{7, 8}})}}, {y});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE((*out)[0].Equals(Tensor::Matrix<float>({{7, 8}})));

  // A missing feed names the placeholder.
  out = session->Run({{x, Tensor::Matrix<float>({{1, 2}})}}, {y});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("scale"));
}

TEST(ClientSessionTest, RunTargetsRunsThemAndFetchesNothing) {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v"), 10);
  auto set = ops::Assign(root.WithOpName("set"), v, 42);
  auto init = ops::GlobalVariablesInitializer(root);
  auto session = NewClient(root);
  ASSERT_TRUE(session);
  EXPECT_EQ(session->Run({v}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(session->RunTargets({init}).ok());
  auto out = session->Run({v});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<int32_t>(), 10);
  ASSERT_TRUE(session->RunTargets({set.op()}).ok());
  out = session->Run({v});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<int32_t>(), 42);
}

TEST(ClientSessionTest,
     VariablesKeepValuesAcrossRunsAndAssignAddReturnsTheNewValue) {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v"), {1.0f, 2.0f});
  auto add = ops::AssignAdd(root.WithOpName("add"), v, {0.5f, 1.0f});
  auto sub = ops::AssignSub(root.WithOpName("sub"), v, {1.0f, 1.0f});
  auto init = ops::GlobalVariablesInitializer(root);
  auto session = NewClient(root);
  ASSERT_TRUE(session);
  ASSERT_TRUE(session->RunTargets({init}).ok());

  auto out = session->Run({add});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE((*out)[0].Equals(Tensor::Vector<float>({1.5f, 3.0f})))
      << (*out)[0];
  out = session->Run({add});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE((*out)[0].Equals(Tensor::Vector<float>({2.0f, 4.0f})))
      << (*out)[0];
  out = session->Run({sub});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE((*out)[0].Equals(Tensor::Vector<float>({1.0f, 3.0f})))
      << (*out)[0];
  out = session->Run({v});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE((*out)[0].Equals(Tensor::Vector<float>({1.0f, 3.0f})))
      << (*out)[0];
}

TEST(ClientSessionTest, FetchedVariableValueIsNotChangedByLaterUpdates) {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v"), int64_t{7});
  auto add = ops::AssignAdd(root.WithOpName("add"), v, int64_t{1});
  auto init = ops::GlobalVariablesInitializer(root);
  auto session = NewClient(root);
  ASSERT_TRUE(session);
  ASSERT_TRUE(session->RunTargets({init}).ok());

  auto first = session->Run({v});
  ASSERT_TRUE(first.ok()) << first.status();
  const Tensor before = (*first)[0];
  ASSERT_EQ(before.scalar<int64_t>(), 7);

  auto added = session->Run({add});
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ((*added)[0].scalar<int64_t>(), 8);
  EXPECT_EQ(before.scalar<int64_t>(), 7)
      << "AssignAdd wrote into a fetched tensor";

  // The value returned by AssignAdd is a snapshot too.
  const Tensor after_first_add = (*added)[0];
  ASSERT_TRUE(session->RunTargets({add.op()}).ok());
  EXPECT_EQ(after_first_add.scalar<int64_t>(), 8);
  auto now = session->Run({v});
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_EQ((*now)[0].scalar<int64_t>(), 9);
}

TEST(ClientSessionTest, InvalidOutputsAreRejected) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, 1);
  auto session = NewClient(root);
  ASSERT_TRUE(session);
  EXPECT_EQ(session->Run({Output()}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(session->Run({{Output(), Tensor::Scalar(1)}}, {a}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(session->RunTargets({Operation()}).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace distflow
