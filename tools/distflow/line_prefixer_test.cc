#include "tools/distflow/line_prefixer.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace distflow {
namespace tools {
namespace {

TEST(LinePrefixerTest, PadsNamesToTheLongest) {
  LinePrefixer prefixer({"ps0", "worker0", "worker1"}, /*colour=*/false);
  EXPECT_EQ(prefixer.Prefix("ps0", "serving"), "ps0     | serving");
  EXPECT_EQ(prefixer.Prefix("worker1", "[[20]]"), "worker1 | [[20]]");
  EXPECT_EQ(prefixer.Prefix("worker1", ""), "worker1 | ");
}

TEST(LinePrefixerTest, ColoursEachTaskDifferently) {
  LinePrefixer prefixer({"ps0", "worker0"}, /*colour=*/true);
  EXPECT_EQ(prefixer.Prefix("ps0", "a"), "\033[36mps0     |\033[0m a");
  EXPECT_EQ(prefixer.Prefix("worker0", "b"), "\033[32mworker0 |\033[0m b");
  // The line itself is left as the task wrote it.
  EXPECT_EQ(prefixer.Prefix("nobody", "c"), "nobody  | c");
}

TEST(LinePrefixerTest, NoColourOffATerminalOrWithNoColor) {
  // A test's stdout is a pipe or a file, never a terminal.
  EXPECT_FALSE(ShouldColour(1));
  setenv("NO_COLOR", "1", 1);
  EXPECT_FALSE(ShouldColour(1));
  unsetenv("NO_COLOR");
}

}  // namespace
}  // namespace tools
}  // namespace distflow
