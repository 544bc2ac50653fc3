// Reading what the recovery tests' trainer (tests/recovery_trainer.cc)
// prints.
#ifndef DISTFLOW_TESTS_TRAINER_OUTPUT_H_
#define DISTFLOW_TESTS_TRAINER_OUTPUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace distflow::testing {

// The global steps a trainer printed ("worker:<i> global_step=<n>"), in
// order.
inline std::vector<int64_t> GlobalSteps(const std::string& output) {
  std::vector<int64_t> steps;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    const size_t at = line.find(" global_step=");
    int64_t step = 0;
    if (at != absl::string_view::npos &&
        absl::SimpleAtoi(line.substr(at + 13), &step)) {
      steps.push_back(step);
    }
  }
  return steps;
}

}  // namespace distflow::testing

#endif  // DISTFLOW_TESTS_TRAINER_OUTPUT_H_
