#include "tools/distflow/line_splitter.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace tools {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(LineSplitterTest, JoinsChunksIntoLines) {
  LineSplitter splitter;
  EXPECT_THAT(splitter.Append("step 1\nst"), ElementsAre("step 1"));
  EXPECT_THAT(splitter.Append("ep"), IsEmpty());
  EXPECT_THAT(splitter.Append(" 2\n\nstep 3\r\n"),
              ElementsAre("step 2", "", "step 3"));
  EXPECT_EQ(splitter.Finish(), std::nullopt);
}

TEST(LineSplitterTest, FinishReturnsTheUnterminatedLine) {
  LineSplitter splitter;
  EXPECT_THAT(splitter.Append("done\nSegmentation fa"), ElementsAre("done"));
  EXPECT_EQ(splitter.Finish(), "Segmentation fa");
  EXPECT_EQ(splitter.Finish(), std::nullopt);
}

TEST(LineSplitterTest, TailKeepsTheLastLines) {
  LineSplitter splitter(/*tail_lines=*/3);
  for (int i = 1; i <= 5; ++i) splitter.Append(std::to_string(i) + "\n");
  splitter.Append("last");
  splitter.Finish();
  EXPECT_THAT(splitter.Tail(), ElementsAre("4", "5", "last"));
}

TEST(LineSplitterTest, CutsLinesLongerThanTheLimit) {
  LineSplitter splitter(/*tail_lines=*/10, /*max_line_bytes=*/4);
  EXPECT_THAT(splitter.Append("abcdefghij\nxy\n"),
              ElementsAre("abcd", "efgh", "ij", "xy"));
}

}  // namespace
}  // namespace tools
}  // namespace distflow
