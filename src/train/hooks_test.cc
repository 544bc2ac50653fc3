// The standard hooks, each in a monitored session over a local session.
#include "distflow/train/hooks.h"

#include <stdlib.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "distflow/ops.h"
#include "distflow/train/global_step.h"
#include "distflow/train/monitored_session.h"
#include "distflow/train/saver.h"
#include "distflow/train/summary.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/summary.pb.h"
#include "train/record_reader.h"

namespace distflow {
namespace train {
namespace {

using ::testing::HasSubstr;

// A model whose loss is 1 / (4 - global_step): finite until the step reaches
// 4, then infinite, then negative.
struct Diverging {
  explicit Diverging(const Scope& s) : global_step(GetOrCreateGlobalStep(s)) {
    Output step = ops::Cast(s, global_step, DataType::kFloat);
    loss = ops::Div(s.WithOpName("loss"), 1.0f, ops::Sub(s, 4.0f, step));
    // The tick waits for the loss, so a step's reads of the global step all
    // see its value before the tick.
    tick = ops::AssignAdd(
        s.WithOpName("tick").WithControlDependencies({loss.op()}), global_step,
        int64_t{1});
  }
  ops::Variable global_step;
  Output tick, loss;
};

std::unique_ptr<MonitoredTrainingSession> Open(
    const Scope& root, MonitoredTrainingSession::Options options) {
  options.log_step_count_steps = 0;
  auto session = MonitoredTrainingSession::Create(root, options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(*session) : nullptr;
}

// The lines of `log` that contain `marker`.
std::vector<std::string> LinesWith(const std::string& log,
                                   const std::string& marker) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(start, end - start);
    if (line.find(marker) != std::string::npos) lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

TEST(NanTensorHookTest, InfiniteLossStopsWithAnErrorNamingTheStep) {
  Scope root = Scope::NewRootScope();
  Diverging model(root);
  auto final_ops =
      std::shared_ptr<FinalOpsHook>(FinalOpsHook::Create({model.global_step}));
  MonitoredTrainingSession::Options options;
  options.hooks.push_back(NanTensorHook::Create(model.loss));
  options.hooks.push_back(final_ops);
  auto session = Open(root, options);
  ASSERT_NE(session, nullptr);
  absl::Status error;
  int steps = 0;
  while (!session->ShouldStop()) {
    // The step that sees global step 4 fails.
    error = session->Run({}, {}, {model.tick.op()}).status();
    ++steps;
    if (!error.ok()) break;
  }
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(error.message(), HasSubstr("'loss:0'"));
  EXPECT_THAT(error.message(), HasSubstr("inf"));
  EXPECT_THAT(error.message(), HasSubstr("global step"));
  EXPECT_TRUE(session->ShouldStop());
  // After a failed step the final ops do not run.
  EXPECT_TRUE(session->Close().ok());
  EXPECT_TRUE(final_ops->final_values().empty());
}

TEST(NanTensorHookTest, WithoutFailingItRequestsAStop) {
  Scope root = Scope::NewRootScope();
  Diverging model(root);
  MonitoredTrainingSession::Options options;
  options.hooks.push_back(NanTensorHook::Create(model.loss, false));
  auto session = Open(root, options);
  ASSERT_NE(session, nullptr);
  int steps = 0;
  while (!session->ShouldStop() && steps < 100) {
    ASSERT_TRUE(session->RunTargets({model.tick.op()}).ok());
    ++steps;
  }
  EXPECT_LE(steps, 6);
  EXPECT_TRUE(session->ShouldStop());
}

TEST(NanTensorHookTest, LossMustBeFloatingPoint) {
  Scope root = Scope::NewRootScope();
  Diverging model(root);
  MonitoredTrainingSession::Options options;
  options.hooks.push_back(NanTensorHook::Create(model.global_step));
  auto session = MonitoredTrainingSession::Create(root, options);
  EXPECT_EQ(session.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(session.status().message(), HasSubstr("int64"));
}

TEST(FinalOpsHookTest, RunsInTheLastStepAndKeepsTheValues) {
  Scope root = Scope::NewRootScope();
  Diverging model(root);
  Output x = ops::Placeholder(root, DataType::kFloat);
  Output doubled = ops::Mul(root, x, 2.0f);
  auto final_ops = std::shared_ptr<FinalOpsHook>(FinalOpsHook::Create(
      {model.global_step, doubled}, {{x, Tensor::Scalar<float>(21)}}));
  MonitoredTrainingSession::Options options;
  options.hooks.push_back(StopAtStepHook::Create(3));
  options.hooks.push_back(final_ops);
  auto session = Open(root, options);
  ASSERT_NE(session, nullptr);
  for (int step = 1; step <= 2; ++step) {
    ASSERT_TRUE(session->RunTargets({model.tick.op()}).ok());
    EXPECT_TRUE(final_ops->final_values().empty()) << "after step " << step;
  }
  // The step that asks to stop runs the hooks' End; Close does not run it
  // again, as no step ran after that one.
  ASSERT_TRUE(session->RunTargets({model.tick.op()}).ok());
  EXPECT_TRUE(session->ShouldStop());
  ASSERT_EQ(final_ops->final_values().size(), 2u);
  EXPECT_EQ(final_ops->final_values()[0].scalar<int64_t>(), 3);
  EXPECT_EQ(final_ops->final_values()[1].scalar<float>(), 42.0f);
  ASSERT_TRUE(session->Close().ok());
  ASSERT_EQ(final_ops->final_values().size(), 2u);
  EXPECT_EQ(final_ops->final_values()[0].scalar<int64_t>(), 3);
}

TEST(FinalOpsHookTest, RunsAgainAtCloseAfterStepsPastTheStop) {
  Scope root = Scope::NewRootScope();
  Diverging model(root);
  auto final_ops = std::shared_ptr<FinalOpsHook>(
      FinalOpsHook::Create({model.global_step}, {}));
  MonitoredTrainingSession::Options options;
  options.hooks.push_back(StopAtStepHook::Create(2));
  options.hooks.push_back(final_ops);
  auto session = Open(root, options);
  ASSERT_NE(session, nullptr);
  while (!session->ShouldStop()) {
    ASSERT_TRUE(session->RunTargets({model.tick.op()}).ok());
  }
  EXPECT_EQ(final_ops->final_values().at(0).scalar<int64_t>(), 2);
  // A step after the stop (say, a last evaluation): End sees it at Close.
  ASSERT_TRUE(session->RunTargets({model.tick.op()}).ok());
  ASSERT_TRUE(session->Close().ok());
  EXPECT_EQ(final_ops->final_values().at(0).scalar<int64_t>(), 3);
}

TEST(LoggingTensorHookTest, LogsTheNamedTensorsEveryNSteps) {
  Scope root = Scope::NewRootScope();
  Diverging model(root);
  MonitoredTrainingSession::Options options;
  options.hooks.push_back(LoggingTensorHook::Create(
      {{"step", model.global_step}, {"loss", model.loss}}, Every::Steps(2)));
  auto session = Open(root, options);
  ASSERT_NE(session, nullptr);
  testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(session->Run({}, {model.loss}, {model.tick.op()}).ok());
  }
  const std::string log = testing::internal::GetCapturedStderr();
  // Steps 0 and 2 of this worker log, with the values read in the step.
  auto lines = LinesWith(log, "step = ");
  ASSERT_EQ(lines.size(), 2u) << log;
  EXPECT_THAT(lines[0], HasSubstr("step = 0, loss = 0.25"));
  EXPECT_THAT(lines[1], HasSubstr("step = 2, loss = 0.5"));
  EXPECT_THAT(lines[1], HasSubstr(" sec)"));
}

TEST(StepCounterHookTest, LogsGlobalStepsAndExamplesPerSecond) {
  Scope root = Scope::NewRootScope();
  Diverging model(root);
  MonitoredTrainingSession::Options options;
  StepCounterHook::Options counter;
  counter.every = Every::Steps(5);
  counter.examples_per_step = 32;
  options.hooks.push_back(StepCounterHook::Create(counter));
  auto session = Open(root, options);
  ASSERT_NE(session, nullptr);
  testing::internal::CaptureStderr();
  for (int i = 0; i < 11; ++i) {
    ASSERT_TRUE(session->RunTargets({model.tick.op()}).ok());
  }
  const std::string log = testing::internal::GetCapturedStderr();
  auto lines = LinesWith(log, "global_step/sec");
  // The first step only starts the clock; the rate is logged 5 and 10 steps
  // later.
  ASSERT_EQ(lines.size(), 2u) << log;
  std::smatch m;
  const std::regex rate(
      "global_step/sec: ([0-9.e+]+), examples/sec: ([0-9.e+]+)");
  ASSERT_TRUE(std::regex_search(lines[0], m, rate)) << lines[0];
  const double steps_per_sec = std::stod(m[1]);
  const double examples_per_sec = std::stod(m[2]);
  EXPECT_GT(steps_per_sec, 0);
  EXPECT_NEAR(examples_per_sec / steps_per_sec, 32, 0.1);
}

TEST(StepCounterHookTest, TheChiefGetsOneFromTheOptions) {
  Scope root = Scope::NewRootScope();
  Diverging model(root);
  MonitoredTrainingSession::Options options;
  options.log_step_count_steps = 2;
  auto session = MonitoredTrainingSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  testing::internal::CaptureStderr();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE((*session)->RunTargets({model.tick.op()}).ok());
  }
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(LinesWith(log, "global_step/sec").size(), 2u) << log;
}

std::string NewTempDir() {
  std::string path = ::testing::TempDir() + "hooks_test_XXXXXX";
  return mkdtemp(path.data()) != nullptr ? path : "";
}

// The scalar summaries of the event files in `dir`: tag -> (step -> value).
using Scalars = std::map<std::string, std::map<int64_t, float>>;
Scalars ReadScalars(const std::string& dir, bool* has_graph = nullptr) {
  Scalars scalars;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("events.out.tfevents", 0) != 0) continue;
    auto records = ReadRecords(entry.path().string());
    EXPECT_TRUE(records.ok()) << records.status();
    if (!records.ok()) continue;
    for (const std::string& record : *records) {
      proto::Event event;
      EXPECT_TRUE(event.ParseFromString(record));
      if (has_graph != nullptr && event.has_graph_def()) *has_graph = true;
      for (const auto& value : event.summary().value()) {
        scalars[value.tag()][event.step()] = value.simple_value();
      }
    }
  }
  return scalars;
}

TEST(SummarySaverHookTest, WritesTheMergedSummariesEveryNSteps) {
  Scope root = Scope::NewRootScope();
  Diverging model(root);
  ops::ScalarSummary(root, "loss", model.loss);
  ops::ScalarSummary(root, "half", 0.5f);
  const std::string dir = NewTempDir();
  auto writer = SummaryWriter::Create(dir);
  ASSERT_TRUE(writer.ok()) << writer.status();
  MonitoredTrainingSession::Options options;
  SummarySaverHook::Options summaries;
  summaries.every = Every::Steps(2);
  summaries.writer = std::move(*writer);
  options.hooks.push_back(SummarySaverHook::Create(summaries));
  auto session = Open(root, options);
  ASSERT_NE(session, nullptr);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(session->RunTargets({model.tick.op()}).ok());
  }
  ASSERT_TRUE(session->Close().ok());
  bool has_graph = false;
  Scalars scalars = ReadScalars(dir, &has_graph);
  EXPECT_TRUE(has_graph);
  // At global steps 0 and 2, with the values computed in those steps.
  EXPECT_EQ(scalars["loss"], (std::map<int64_t, float>{{0, 0.25f}, {2, 0.5f}}));
  EXPECT_EQ(scalars["half"], (std::map<int64_t, float>{{0, 0.5f}, {2, 0.5f}}));
}

TEST(SummarySaverHookTest, NeedsAWriterAndSummaries) {
  Scope root = Scope::NewRootScope();
  Diverging model(root);
  MonitoredTrainingSession::Options options;
  options.hooks.push_back(SummarySaverHook::Create({}));
  auto session = MonitoredTrainingSession::Create(root, options);
  EXPECT_EQ(session.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(session.status().message(), HasSubstr("writer"));

  auto writer = SummaryWriter::Create(NewTempDir());
  ASSERT_TRUE(writer.ok());
  SummarySaverHook::Options summaries;
  summaries.writer = std::move(*writer);
  options.hooks = {SummarySaverHook::Create(summaries)};
  session = MonitoredTrainingSession::Create(root, options);
  EXPECT_EQ(session.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(session.status().message(), HasSubstr("ScalarSummary"));
}

// The chief's standard hooks write summaries and speed to the summary
// directory (by default the checkpoint directory).
TEST(SummarySaverHookTest, TheChiefWritesSummariesAndSpeedFromTheOptions) {
  Scope root = Scope::NewRootScope();
  Diverging model(root);
  ops::ScalarSummary(root, "loss", model.loss);
  const std::string dir = NewTempDir();
  MonitoredTrainingSession::Options options;
  options.summary_dir = dir;
  options.save_summaries_steps = 3;
  options.log_step_count_steps = 1;
  {
    auto session = MonitoredTrainingSession::Create(root, options);
    ASSERT_TRUE(session.ok()) << session.status();
    for (int i = 0; i < 4; ++i) {
      ASSERT_TRUE((*session)->RunTargets({model.tick.op()}).ok());
    }
  }
  Scalars scalars = ReadScalars(dir);
  EXPECT_EQ(scalars["loss"].size(), 2u);             // steps 0 and 3
  EXPECT_EQ(scalars["global_step/sec"].size(), 3u);  // steps 1, 2 and 3
  for (const auto& [step, rate] : scalars["global_step/sec"]) {
    EXPECT_GT(rate, 0) << "at step " << step;
  }
}

TEST(CheckpointSaverHookTest, SavesEveryNStepsAndAtTheEnd) {
  Scope root = Scope::NewRootScope();
  Diverging model(root);
  const std::string dir = NewTempDir();
  MonitoredTrainingSession::Options options;
  options.checkpoint_dir = dir;
  options.save_checkpoint_steps = 2;
  auto session = Open(root, options);
  ASSERT_NE(session, nullptr);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(session->RunTargets({model.tick.op()}).ok());
  }
  // Saved at global steps 2 and 4 while training...
  for (int step : {2, 4}) {
    EXPECT_TRUE(std::filesystem::exists(dir + "/model.ckpt-" +
                                        std::to_string(step) + ".index.json"))
        << step;
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/model.ckpt-5.index.json"));
  // ... and at the last one when the session closes.
  ASSERT_TRUE(session->Close().ok());
  auto latest = LatestCheckpoint(dir);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, dir + "/model.ckpt-5");
}

// The chief's checkpoints and summaries by time, as the options set them.
TEST(CheckpointSaverHookTest, SavesEveryNSecondsFromTheOptions) {
  Scope root = Scope::NewRootScope();
  Diverging model(root);
  ops::ScalarSummary(root, "loss", model.loss);
  const std::string dir = NewTempDir();
  MonitoredTrainingSession::Options options;
  options.checkpoint_dir = dir;
  // Long enough that a loaded machine runs two steps in less.
  options.save_checkpoint_secs = 4;
  options.save_checkpoint_steps = 0;
  options.save_summaries_secs = 4;
  options.save_summaries_steps = 0;
  options.log_step_count_steps = 0;
  auto session = Open(root, options);
  ASSERT_NE(session, nullptr);
  auto tick = [&] { ASSERT_TRUE(session->RunTargets({model.tick.op()}).ok()); };
  tick();  // global step 1: the first summary; no checkpoint yet
  std::this_thread::sleep_for(std::chrono::milliseconds(4500));
  tick();  // 2: four seconds have passed, so both
  tick();  // 3: too soon for either
  auto exists = [&](int step) {
    return std::filesystem::exists(dir + "/model.ckpt-" + std::to_string(step) +
                                   ".index.json");
  };
  EXPECT_FALSE(exists(1));
  EXPECT_TRUE(exists(2));
  EXPECT_FALSE(exists(3));
  ASSERT_TRUE(session->Close().ok());
  EXPECT_TRUE(exists(3));  // the save at the end
  EXPECT_EQ(ReadScalars(dir)["loss"].size(), 2u);
}

TEST(CheckpointSaverHookTest, TheNextChiefRestoresTheLatestCheckpoint) {
  const std::string dir = NewTempDir();
  MonitoredTrainingSession::Options options;
  options.checkpoint_dir = dir;
  options.save_checkpoint_steps = 100;  // only the save at the end
  {
    Scope root = Scope::NewRootScope();
    Diverging model(root);
    auto session = Open(root, options);
    ASSERT_NE(session, nullptr);
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(session->RunTargets({model.tick.op()}).ok());
    }
  }
  // A new process: its own graph and session, the same directory.
  Scope root = Scope::NewRootScope();
  Diverging model(root);
  testing::internal::CaptureStderr();
  auto session = Open(root, options);
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_NE(session, nullptr);
  EXPECT_THAT(log, HasSubstr("restored checkpoint " + dir + "/model.ckpt-3"));
  auto out = session->Run({model.global_step});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<int64_t>(), 3);
}

TEST(CheckpointSaverHookTest, CheckpointsNeedAGlobalStep) {
  Scope root = Scope::NewRootScope();
  ops::Variable v(root, 1.0f);
  MonitoredTrainingSession::Options options;
  options.checkpoint_dir = NewTempDir();
  auto session = MonitoredTrainingSession::Create(root, options);
  EXPECT_EQ(session.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(session.status().message(), HasSubstr("global step"));
}

TEST(EveryTest, ExactlyOnePeriodMustBePositive) {
  EXPECT_TRUE(Every::Steps(3).Validate("H").ok());
  EXPECT_TRUE(Every::Secs(0.5).Validate("H").ok());
  EXPECT_FALSE(Every{}.Validate("H").ok());
  EXPECT_FALSE((Every{2, 1.0}).Validate("H").ok());
  EXPECT_THAT(std::string(Every{}.Validate("MyHook").message()),
              HasSubstr("MyHook"));
}

TEST(EveryTimerTest, StepsAndSeconds) {
  EveryTimer steps(Every::Steps(10));
  EXPECT_TRUE(steps.Due(3));
  EXPECT_FALSE(steps.Fire(3).has_value());
  EXPECT_FALSE(steps.Due(3));
  EXPECT_FALSE(steps.Due(12));
  EXPECT_TRUE(steps.Due(13));
  auto since = steps.Fire(14);
  ASSERT_TRUE(since.has_value());
  EXPECT_EQ(since->first, 11);

  // An hour is not up at the next step; 50 ms are after a sleep of 60 ms.
  // (A short period for both would fail whenever the test is descheduled
  // for longer than that between Fire and Due.)
  EveryTimer hourly(Every::Secs(3600));
  hourly.Fire(1);
  EXPECT_FALSE(hourly.Due(2));
  EveryTimer secs(Every::Secs(0.05));
  secs.Fire(1);
  absl::SleepFor(absl::Milliseconds(60));
  EXPECT_TRUE(secs.Due(2));
  secs.Reset();
  EXPECT_TRUE(secs.Due(1));
}

}  // namespace
}  // namespace train
}  // namespace distflow
