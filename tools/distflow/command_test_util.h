// Running build/bin/distflow in a child process, for the subcommands' tests.
#ifndef DISTFLOW_TOOLS_DISTFLOW_COMMAND_TEST_UTIL_H_
#define DISTFLOW_TOOLS_DISTFLOW_COMMAND_TEST_UTIL_H_

#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "subprocess.h"

namespace distflow {
namespace testing {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs `distflow args...` to its end (30 s at most) and returns what it did.
inline CommandResult RunDistflow(std::vector<std::string> args) {
  args.insert(args.begin(), absl::StrCat(DISTFLOW_BIN_DIR, "/distflow"));
  Subprocess process(args);
  EXPECT_TRUE(process.started());
  auto code = process.Wait(std::chrono::seconds(30));
  EXPECT_TRUE(code.has_value()) << "distflow hung: " << process.Output();
  return {code.value_or(-1), process.Output()};
}

}  // namespace testing
}  // namespace distflow

#endif  // DISTFLOW_TOOLS_DISTFLOW_COMMAND_TEST_UTIL_H_
