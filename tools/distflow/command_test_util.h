// Running build/bin/distflow in a child process, for the subcommands' tests.
#ifndef DISTFLOW_TOOLS_DISTFLOW_COMMAND_TEST_UTIL_H_
#define DISTFLOW_TOOLS_DISTFLOW_COMMAND_TEST_UTIL_H_

#include <stdlib.h>

#include <chrono>
#include <filesystem>
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

// A new directory under the test's temporary directory, removed with all it
// holds when the object goes away.
class ScopedTempDir {
 public:
  ScopedTempDir() : path_(::testing::TempDir() + "distflow_command_XXXXXX") {
    EXPECT_NE(mkdtemp(path_.data()), nullptr) << path_;
  }
  ~ScopedTempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace testing
}  // namespace distflow

#endif  // DISTFLOW_TOOLS_DISTFLOW_COMMAND_TEST_UTIL_H_
