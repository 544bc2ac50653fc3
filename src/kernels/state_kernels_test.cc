// Variables (VarHandleOp, ReadVariableOp, Assign*VariableOp,
// VarIsInitializedOp), run through a local session whose variables persist
// across runs.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "distflow/ops.h"
#include "distflow/scope.h"
#include "distflow/session.h"
#include "distflow/tensor.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"

namespace distflow {
namespace {

using test::HasError;
using test::MakeTensor;
using test::TensorsEqual;

// A session over the scope's graph; fails the test if the graph does not build.
std::unique_ptr<ClientSession> OpenSession(const Scope& scope) {
  auto session = ClientSession::Create(scope);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(*session) : nullptr;
}

// The single value of `fetch`, or an uninitialized tensor after reporting the
// error.
Tensor Fetch(ClientSession* session, const Output& fetch,
             const ClientSession::FeedDict& feeds = {}) {
  auto got = session->Run(feeds, {fetch});
  EXPECT_TRUE(got.ok()) << got.status();
  return got.ok() ? (*got)[0] : Tensor();
}

TEST(StateKernelsTest, InitializeThenRead) {
  Scope s = Scope::NewRootScope();
  ops::Variable v(s.WithOpName("w"), {{1.5f, 2.f}, {3.f, -4.f}});
  ops::Variable counter(s.WithOpName("counter"), int64_t{7});
  auto init = ops::GlobalVariablesInitializer(s);
  auto session = OpenSession(s);
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->RunTargets({init}).ok());
  EXPECT_TRUE(
      TensorsEqual<float>(Fetch(session.get(), v),
                          Tensor::Matrix<float>({{1.5f, 2.f}, {3.f, -4.f}})));
  EXPECT_TRUE(TensorsEqual<int64_t>(Fetch(session.get(), counter),
                                    Tensor::Scalar<int64_t>(7)));
  // Reads do not change the value.
  EXPECT_TRUE(TensorsEqual<int64_t>(Fetch(session.get(), counter),
                                    Tensor::Scalar<int64_t>(7)));
}

TEST(StateKernelsTest, AssignReturnsAndKeepsTheNewValue) {
  Scope s = Scope::NewRootScope();
  ops::Variable v(s, {1, 2, 3});
  Output p = ops::Placeholder(s, DataType::kInt32, {3});
  Output assign = ops::Assign(s, v, p);
  auto session = OpenSession(s);
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->RunTargets({v.initializer()}).ok());
  for (int round = 0; round < 3; ++round) {
    const Tensor value =
        Tensor::Vector<int32_t>({10 * round, -round, round * round});
    EXPECT_TRUE(TensorsEqual<int32_t>(
        Fetch(session.get(), assign, {{p, value}}), value));
    EXPECT_TRUE(TensorsEqual<int32_t>(Fetch(session.get(), v), value));
  }
}

// AssignAdd and AssignSub return the updated value and keep it, for several
// steps in a row.
template <typename T>
void CheckAssignAddSub() {
  Scope s = Scope::NewRootScope();
  const Tensor initial = test::RandomTensor<T>({2, 3}, 21);
  const Tensor delta = test::RandomTensor<T>({2, 3}, 22);
  ops::Variable v(s.WithOpName("acc"), initial);
  Output add = ops::AssignAdd(s, v, delta);
  Output sub = ops::AssignSub(s, v, ops::Add(s, delta, delta));
  auto session = OpenSession(s);
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->RunTargets({ops::GlobalVariablesInitializer(s)}).ok());
  std::vector<T> want(initial.flat<T>().begin(), initial.flat<T>().end());
  const Tensor before = Fetch(session.get(), v);
  for (int step = 0; step < 3; ++step) {
    for (size_t i = 0; i < want.size(); ++i)
      want[i] = static_cast<T>(want[i] + delta.flat<T>()[i]);
    EXPECT_TRUE(TensorsEqual<T>(Fetch(session.get(), add),
                                MakeTensor<T>({2, 3}, want)));
    EXPECT_TRUE(
        TensorsEqual<T>(Fetch(session.get(), v), MakeTensor<T>({2, 3}, want)));
  }
  for (size_t i = 0; i < want.size(); ++i) {
    want[i] = static_cast<T>(
        want[i] - static_cast<T>(delta.flat<T>()[i] + delta.flat<T>()[i]));
  }
  EXPECT_TRUE(
      TensorsEqual<T>(Fetch(session.get(), sub), MakeTensor<T>({2, 3}, want)));
  EXPECT_TRUE(
      TensorsEqual<T>(Fetch(session.get(), v), MakeTensor<T>({2, 3}, want)));
  // Updates never write into a value handed out earlier, nor into the initial
  // value.
  EXPECT_TRUE(TensorsEqual<T>(before, initial));
  EXPECT_TRUE(TensorsEqual<T>(initial, test::RandomTensor<T>({2, 3}, 21)));
}

TEST(StateKernelsTest, AssignAddAndAssignSubOfEveryNumericType) {
  CheckAssignAddSub<float>();
  CheckAssignAddSub<double>();
  CheckAssignAddSub<int32_t>();
  CheckAssignAddSub<int64_t>();
  CheckAssignAddSub<uint8_t>();
}

TEST(StateKernelsTest, AssignOfTheWrongShapeNamesVariableAndShapes) {
  Scope s = Scope::NewRootScope();
  ops::Variable v(s.WithOpName("weights"), Tensor(DataType::kFloat, {2, 2}));
  Output p = ops::Placeholder(s, DataType::kFloat);
  Output assign = ops::Assign(s, v, p);
  Output add = ops::AssignAdd(s, v, p);
  Output sub = ops::AssignSub(s, v, p);
  auto session = OpenSession(s);
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->RunTargets({v.initializer()}).ok());
  const Tensor wrong = Tensor::Vector<float>({1, 2, 3});
  const std::pair<Output, std::string> updates[] = {
      {assign, "assign"}, {add, "add"}, {sub, "subtract"}};
  for (const auto& [update, verb] : updates) {
    SCOPED_TRACE(update.name());
    EXPECT_TRUE(HasError(session->Run({{p, wrong}}, {update}).status(),
                         absl::StatusCode::kInvalidArgument,
                         {verb, "weights", "[3]", "[2,2]"}));
  }
  // The variable kept its value.
  EXPECT_TRUE(TensorsEqual<float>(Fetch(session.get(), v),
                                  Tensor(DataType::kFloat, {2, 2})));
}

TEST(StateKernelsTest, ReadOrUpdateBeforeInitializationNamesTheVariable) {
  Scope s = Scope::NewRootScope();
  ops::Variable v(s.WithOpName("bias"), {1.f, 2.f});
  Output add = ops::AssignAdd(s, v, {1.f, 1.f});
  Output sub = ops::AssignSub(s, v, {1.f, 1.f});
  Output doubled = ops::Mul(s, v, 2.f);
  auto session = OpenSession(s);
  ASSERT_NE(session, nullptr);
  for (const Output& fetch : {Output(v), add, sub, doubled}) {
    SCOPED_TRACE(fetch.name());
    EXPECT_TRUE(HasError(session->Run({fetch}).status(),
                         absl::StatusCode::kFailedPrecondition, {"'bias'"}));
  }
  ASSERT_TRUE(session->RunTargets({v.initializer()}).ok());
  EXPECT_TRUE(TensorsEqual<float>(Fetch(session.get(), doubled),
                                  Tensor::Vector<float>({2, 4})));
}

TEST(StateKernelsTest, IsVariableInitializedTurnsTrue) {
  Scope s = Scope::NewRootScope();
  ops::Variable a(s, {1, 2});
  ops::Variable b(s, 3.0);
  Output a_ready = ops::IsVariableInitialized(s, a);
  Output b_ready = ops::IsVariableInitialized(s, b);
  auto session = OpenSession(s);
  ASSERT_NE(session, nullptr);
  auto got = session->Run({a_ready, b_ready});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(TensorsEqual<bool>((*got)[0], Tensor::Scalar(false)));
  EXPECT_TRUE(TensorsEqual<bool>((*got)[1], Tensor::Scalar(false)));
  ASSERT_TRUE(session->RunTargets({a.initializer()}).ok());
  got = session->Run({a_ready, b_ready});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(TensorsEqual<bool>((*got)[0], Tensor::Scalar(true)));
  EXPECT_TRUE(TensorsEqual<bool>((*got)[1], Tensor::Scalar(false)));
}

TEST(StateKernelsTest, VariableWithoutInitializerIsAssignedThenRead) {
  Scope s = Scope::NewRootScope();
  ops::Variable v(s.WithOpName("table"), DataType::kString, {2});
  EXPECT_FALSE(v.initializer().valid());
  Output ready = ops::IsVariableInitialized(s, v);
  Output assign = ops::Assign(s, v, Tensor::Vector<std::string>({"a", "bc"}));
  auto session = OpenSession(s);
  ASSERT_NE(session, nullptr);
  EXPECT_TRUE(
      TensorsEqual<bool>(Fetch(session.get(), ready), Tensor::Scalar(false)));
  EXPECT_TRUE(HasError(session->Run({v}).status(),
                       absl::StatusCode::kFailedPrecondition, {"'table'"}));
  ASSERT_TRUE(session->Run({assign}).ok());
  EXPECT_TRUE(
      TensorsEqual<bool>(Fetch(session.get(), ready), Tensor::Scalar(true)));
  EXPECT_TRUE(TensorsEqual<std::string>(
      Fetch(session.get(), v), Tensor::Vector<std::string>({"a", "bc"})));
}

TEST(StateKernelsTest, FirstAssignMustFitTheDeclaredShape) {
  Scope s = Scope::NewRootScope();
  ops::Variable v(s.WithOpName("weights"), DataType::kFloat, {2});
  Output value = ops::Placeholder(s, DataType::kFloat);
  Output assign = ops::Assign(s, v, value);
  auto session = OpenSession(s);
  ASSERT_NE(session, nullptr);
  EXPECT_TRUE(HasError(
      session->Run({{value, Tensor::Vector<float>({1, 2, 3})}}, {assign})
          .status(),
      absl::StatusCode::kInvalidArgument, {"'weights'", "[3]", "[2]"}));
  ASSERT_TRUE(
      session->Run({{value, Tensor::Vector<float>({1, 2})}}, {assign}).ok());
  EXPECT_TRUE(TensorsEqual<float>(Fetch(session.get(), v),
                                  Tensor::Vector<float>({1, 2})));
}

TEST(StateKernelsTest, EachSessionHasItsOwnVariables) {
  Scope s = Scope::NewRootScope();
  ops::Variable v(s, int64_t{0});
  Output add = ops::AssignAdd(s, v, 5);
  auto first = OpenSession(s);
  auto second = OpenSession(s);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(first->RunTargets({v.initializer()}).ok());
  ASSERT_TRUE(second->RunTargets({v.initializer()}).ok());
  EXPECT_TRUE(TensorsEqual<int64_t>(Fetch(first.get(), add),
                                    Tensor::Scalar<int64_t>(5)));
  EXPECT_TRUE(TensorsEqual<int64_t>(Fetch(first.get(), add),
                                    Tensor::Scalar<int64_t>(10)));
  EXPECT_TRUE(TensorsEqual<int64_t>(Fetch(second.get(), v),
                                    Tensor::Scalar<int64_t>(0)));
}

// The ready op of a monitored session: it names exactly the variables still
// without a value, in the order given, and nothing once all have one.
TEST(StateKernelsTest, ReportUninitializedVariablesNamesTheMissingOnes) {
  Scope s = Scope::NewRootScope();
  ops::Variable a(s.WithOpName("a"), 1.0f);
  ops::Variable b(s.WithOpName("b"), {1, 2});
  ops::Variable c(s.WithOpName("c"), int64_t{3});
  Output report = ops::ReportUninitializedVariables(s, {a, b, c});
  Output none = ops::ReportUninitializedVariables(s, {});
  auto session = OpenSession(s);
  ASSERT_NE(session, nullptr);
  auto names = [&] {
    const Tensor names = Fetch(session.get(), report);
    const auto flat = names.flat<std::string>();
    return std::vector<std::string>(flat.begin(), flat.end());
  };
  EXPECT_EQ(names(), (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_TRUE(session->RunTargets({b.initializer()}).ok());
  EXPECT_EQ(names(), (std::vector<std::string>{"a", "c"}));
  ASSERT_TRUE(session->RunTargets({a.initializer(), c.initializer()}).ok());
  EXPECT_EQ(names(), std::vector<std::string>{});
  EXPECT_EQ(Fetch(session.get(), none).NumElements(), 0);
}

}  // namespace
}  // namespace distflow
