// MonitoredTrainingSession in one process: creation, the step loop, the order
// in which hooks are called, and the errors of bad options.
#include "distflow/train/monitored_session.h"

#include <memory>
#include <string>
#include <vector>

#include "distflow/ops.h"
#include "distflow/train/global_step.h"
#include "distflow/train/hooks.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"

namespace distflow {
namespace train {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A model whose every step adds 1 to the global step and 10 to `total`.
struct Counter {
  explicit Counter(const Scope& s)
      : global_step(GetOrCreateGlobalStep(s)),
        total(s.WithOpName("total"), int64_t{5}) {
    tick = ops::AssignAdd(s.WithOpName("tick"), global_step, int64_t{1});
    add = ops::AssignAdd(s.WithOpName("add"), total, int64_t{10});
  }
  ops::Variable global_step;
  ops::Variable total;
  Output tick, add;
};

MonitoredTrainingSession::Options LocalOptions() {
  MonitoredTrainingSession::Options options;
  options.log_step_count_steps = 0;
  return options;
}

TEST(MonitoredSessionTest, TheUsersLoopRunsToTheLastStep) {
  Scope root = Scope::NewRootScope();
  Counter model(root);
  auto options = LocalOptions();
  options.hooks.push_back(StopAtStepHook::Create(/*last_step=*/7));
  auto session = MonitoredTrainingSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  int steps = 0;
  int64_t last_total = 0;
  while (!(*session)->ShouldStop()) {
    auto out = (*session)->Run({model.add, model.tick});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 2u);  // the hooks' fetches are not returned
    last_total = (*out)[0].scalar<int64_t>();
    ++steps;
  }
  // The chief initialized the variables (total starts at 5), and the loop
  // ended exactly at the last step.
  EXPECT_EQ(steps, 7);
  EXPECT_EQ(last_total, 5 + 70);
  EXPECT_TRUE((*session)->Close().ok());
  EXPECT_EQ((*session)->num_recoveries(), 0);
}

TEST(MonitoredSessionTest, ForNumStepsCountsFromTheFirstSession) {
  Scope root = Scope::NewRootScope();
  Counter model(root);
  auto options = LocalOptions();
  // A local init op that moves the global step to 100 before the hook
  // reads it: the hook counts from there.
  options.scaffold.local_init_op =
      ops::Assign(root, model.global_step, int64_t{100}).op();
  auto stop = StopAtStepHook::ForNumSteps(3);
  StopAtStepHook* stop_ptr = stop.get();
  options.hooks.push_back(std::move(stop));
  auto session = MonitoredTrainingSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(stop_ptr->last_step(), 103);
  int steps = 0;
  while (!(*session)->ShouldStop()) {
    ASSERT_TRUE((*session)->Run({model.tick}).ok());
    ++steps;
  }
  EXPECT_EQ(steps, 3);
}

// Records every call it gets, adds a fetch and a feed of its own, and asks to
// stop at its third step.
class RecordingHook : public SessionRunHook {
 public:
  RecordingHook(Output fetch, Output fed) : fetch_(fetch), fed_(fed) {}
  absl::Status Begin(const Scope& scope) override {
    calls.push_back("Begin");
    return absl::OkStatus();
  }
  absl::Status AfterCreateSession(ClientSession* session) override {
    calls.push_back("AfterCreateSession");
    return absl::OkStatus();
  }
  SessionRunArgs BeforeRun(SessionRunContext* context) override {
    calls.push_back("BeforeRun");
    seen_fetches = context->original_fetches().size();
    return SessionRunArgs{{fetch_}, {}, {{fed_, Tensor::Scalar<float>(4)}}};
  }
  absl::Status AfterRun(SessionRunContext* context,
                        const SessionRunValues& values) override {
    calls.push_back("AfterRun");
    values_seen.push_back(values.results.at(0).scalar<float>());
    if (values_seen.size() == 3) context->RequestStop();
    return absl::OkStatus();
  }
  absl::Status End(ClientSession* session) override {
    calls.push_back("End");
    return absl::OkStatus();
  }
  void BeforeCloseSession(ClientSession* session) override {
    calls.push_back("BeforeCloseSession");
  }
  std::vector<std::string> calls;
  std::vector<float> values_seen;
  size_t seen_fetches = 0;

 private:
  Output fetch_, fed_;
};

TEST(MonitoredSessionTest, HooksAreCalledInOrderAndTheirFetchesRunInTheStep) {
  Scope root = Scope::NewRootScope();
  Counter model(root);
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
  Output twice = ops::Mul(root.WithOpName("twice"), x, 2.0f);
  auto hook = std::make_shared<RecordingHook>(twice, x);
  auto options = LocalOptions();
  options.hooks.push_back(hook);
  auto session = MonitoredTrainingSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  while (!(*session)->ShouldStop()) {
    ASSERT_TRUE((*session)->Run({model.tick}).ok());
  }
  ASSERT_TRUE((*session)->Close().ok());
  EXPECT_THAT(hook->values_seen, ElementsAre(8.0f, 8.0f, 8.0f));
  EXPECT_EQ(hook->seen_fetches, 1u);
  EXPECT_THAT(hook->calls,
              ElementsAre("Begin", "AfterCreateSession", "BeforeRun",
                          "AfterRun", "BeforeRun", "AfterRun", "BeforeRun",
                          "AfterRun", "End", "BeforeCloseSession"));
  // Closing twice is harmless and calls End once.
  EXPECT_TRUE((*session)->Close().ok());
  EXPECT_EQ(hook->calls.size(), 10u);
  EXPECT_EQ((*session)->Run({model.tick}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(MonitoredSessionTest, ChiefOnlyHooksRunOnTheChiefOnly) {
  for (bool is_chief : {true, false}) {
    Scope root = Scope::NewRootScope();
    Counter model(root);
    Output x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
    auto hook = std::make_shared<RecordingHook>(x, x);
    auto options = LocalOptions();
    options.is_chief = is_chief;
    // A local session has no chief to wait for: initialize in the local
    // init op so that the worker finds the model ready.
    options.scaffold.local_init_op = ops::GlobalVariablesInitializer(root);
    options.scaffold.ready_op =
        ops::Const(root, Tensor(DataType::kString, TensorShape({0})));
    options.chief_only_hooks.push_back(hook);
    auto session = MonitoredTrainingSession::Create(root, options);
    ASSERT_TRUE(session.ok()) << session.status();
    ASSERT_TRUE((*session)->Run({model.tick}).ok());
    EXPECT_EQ(hook->values_seen.size(), is_chief ? 1u : 0u);
  }
}

TEST(MonitoredSessionTest, InitOpThatMissesAVariableIsNamed) {
  Scope root = Scope::NewRootScope();
  Counter model(root);
  auto options = LocalOptions();
  options.scaffold.init_op = model.global_step.initializer();
  auto session = MonitoredTrainingSession::Create(root, options);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(session.status().message(), HasSubstr("(total)"));
  EXPECT_THAT(session.status().message(), HasSubstr("1 variable is"));
}

TEST(MonitoredSessionTest, BadOptionsAndHooksAreErrorsNamingThem) {
  Scope root = Scope::NewRootScope();
  Counter model(root);
  auto options = LocalOptions();
  options.max_wait_secs = 0;
  auto bad = MonitoredTrainingSession::Create(root, options);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("max_wait_secs"));

  options = LocalOptions();
  options.hooks.push_back(nullptr);
  bad = MonitoredTrainingSession::Create(root, options);
  EXPECT_THAT(bad.status().message(), HasSubstr("hooks[0] is null"));

  options = LocalOptions();
  options.hooks.push_back(
      LoggingTensorHook::Create({{"total", model.total}}, Every{}));
  bad = MonitoredTrainingSession::Create(root, options);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("LoggingTensorHook"));

  options = LocalOptions();
  options.scaffold.ready_op = ops::Const(root, 1.0f);
  bad = MonitoredTrainingSession::Create(root, options);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("string vector"));
}

TEST(MonitoredSessionTest, StopAtStepNeedsAGlobalStep) {
  Scope root = Scope::NewRootScope();
  ops::Variable v(root, 1.0f);
  auto options = LocalOptions();
  options.hooks.push_back(StopAtStepHook::Create(10));
  auto session = MonitoredTrainingSession::Create(root, options);
  EXPECT_EQ(session.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(session.status().message(), HasSubstr("StopAtStepHook"));
  EXPECT_THAT(session.status().message(), HasSubstr("GetOrCreateGlobalStep"));
}

TEST(MonitoredSessionTest, ScopeErrorIsReported) {
  Scope root = Scope::NewRootScope();
  ops::MatMul(root, ops::Const(root, {{1.0f, 2.0f}}),
              ops::Const(root, {{1.0f, 2.0f}}));
  auto session = MonitoredTrainingSession::Create(root, LocalOptions());
  EXPECT_EQ(session.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(session.status().message(), HasSubstr("MatMul"));
}

}  // namespace
}  // namespace train
}  // namespace distflow
