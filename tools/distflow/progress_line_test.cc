#include "tools/distflow/progress_line.h"

#include "gtest/gtest.h"

namespace distflow {
namespace tools {
namespace {

TEST(ParseProgressLineTest, ReadsAllFields) {
  auto p = ParseProgressLine(
      "progress step=250/6000 loss=0.4123 examples_per_sec=1834");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 250);
  EXPECT_EQ(p->last_step, 6000);
  EXPECT_DOUBLE_EQ(*p->loss, 0.4123);
  EXPECT_DOUBLE_EQ(*p->examples_per_sec, 1834);
}

TEST(ParseProgressLineTest, OnlyTheStepIsRequiredAndUnknownKeysAreIgnored) {
  auto p = ParseProgressLine("progress  local_step=7 step=12 note");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 12);
  EXPECT_EQ(p->last_step, 0);
  EXPECT_FALSE(p->loss.has_value());
  EXPECT_FALSE(p->examples_per_sec.has_value());
}

TEST(ParseProgressLineTest, RefusesOtherLinesAndBadValues) {
  for (const char* line :
       {"", "step=5", "worker 0: progress step=5", "progress",
        "progress loss=0.5", "progress step=abc", "progress step=5/",
        "progress step=5/0", "progress step=-1", "progress step=5 loss=nan",
        "progress step=5 examples_per_sec=fast", "progressive step=5"}) {
    EXPECT_FALSE(ParseProgressLine(line).has_value()) << line;
  }
}

TEST(ProgressMeterTest, ShowsStepLossSpeedAndTimeLeft) {
  ProgressMeter meter("worker0", /*default_last_step=*/0);
  EXPECT_EQ(meter.StatusLine(), "");
  meter.Update(*ParseProgressLine("progress step=100/1000 loss=1.5"), 10.0);
  // One line gives no speed yet, so no ETA.
  EXPECT_EQ(meter.StatusLine(), "worker0  step 100/1000 (10%)  loss 1.5000");
  meter.Update(*ParseProgressLine(
                   "progress step=300/1000 loss=0.75 examples_per_sec=2000"),
               20.0);
  // 200 steps in 10 s: the 700 left take 35 s.
  EXPECT_EQ(meter.StatusLine(),
            "worker0  step 300/1000 (30%)  loss 0.7500  2000 examples/sec  "
            "ETA 35s");
}

TEST(ProgressMeterTest, TakesTheLastStepFromTheFlagWhenLinesLackIt) {
  ProgressMeter meter("chief", /*default_last_step=*/500);
  meter.Update(*ParseProgressLine("progress step=0"), 0.0);
  meter.Update(*ParseProgressLine("progress step=100"), 100.0);
  EXPECT_EQ(meter.StatusLine(), "chief  step 100/500 (20%)  ETA 6m40s");
}

TEST(ProgressMeterTest, WithoutALastStepShowsNoEta) {
  ProgressMeter meter("worker0", 0);
  meter.Update(*ParseProgressLine("progress step=1"), 0.0);
  meter.Update(*ParseProgressLine("progress step=9"), 1.0);
  EXPECT_EQ(meter.StatusLine(), "worker0  step 9");
}

TEST(TrainStepsFlagTest, ReadsBothSpellingsAndIgnoresTheRest) {
  EXPECT_EQ(TrainStepsFlag({"--model=mlp", "--train_steps=3000"}), 3000);
  EXPECT_EQ(TrainStepsFlag({"--train_steps", "40", "--x"}), 40);
  EXPECT_EQ(TrainStepsFlag({"--train_steps=1", "--train_steps=2"}), 2);
  EXPECT_EQ(TrainStepsFlag({"--train_steps=many"}), 0);
  EXPECT_EQ(TrainStepsFlag({"--train_stepsx=5"}), 0);
  EXPECT_EQ(TrainStepsFlag({"--", "--train_steps=5"}), 0);
  EXPECT_EQ(TrainStepsFlag({}), 0);
}

TEST(FormatDurationTest, PicksUnitsByLength) {
  EXPECT_EQ(FormatDuration(-3), "0s");
  EXPECT_EQ(FormatDuration(42.4), "42s");
  EXPECT_EQ(FormatDuration(185), "3m05s");
  EXPECT_EQ(FormatDuration(3720), "1h02m");
}

}  // namespace
}  // namespace tools
}  // namespace distflow
