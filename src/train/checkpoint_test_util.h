// What the checkpoint tests share: a fresh directory, and the names in one.
#ifndef DISTFLOW_TRAIN_CHECKPOINT_TEST_UTIL_H_
#define DISTFLOW_TRAIN_CHECKPOINT_TEST_UTIL_H_

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace distflow {
namespace train {

// A new empty directory under the test's temporary directory.
inline std::string TestDir() {
  std::string dir = ::testing::TempDir() + "distflow_checkpoint_XXXXXX";
  EXPECT_NE(mkdtemp(dir.data()), nullptr);
  return dir;
}

// The names of the entries of `dir`, sorted.
inline std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace train
}  // namespace distflow

#endif  // DISTFLOW_TRAIN_CHECKPOINT_TEST_UTIL_H_
