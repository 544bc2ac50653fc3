// Small helpers shared by the distributed examples.
#ifndef DISTFLOW_EXAMPLES_EXAMPLE_UTIL_H_
#define DISTFLOW_EXAMPLES_EXAMPLE_UTIL_H_

#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"

namespace examples {

// The value of "--name=value" or "--name value" in `args`, or `fallback`.
inline std::string FlagValue(const std::vector<std::string>& args,
                             const std::string& name,
                             const std::string& fallback) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].rfind(name + "=", 0) == 0)
      return args[i].substr(name.size() + 1);
    if (args[i] == name && i + 1 < args.size()) return args[i + 1];
  }
  return fallback;
}

// The positive integer value of flag `name` in `args` (or `fallback`);
// INVALID_ARGUMENT naming the flag if it is not one.
inline absl::StatusOr<int> PositiveIntFlag(const std::vector<std::string>& args,
                                           const std::string& name,
                                           int fallback) {
  const std::string text = FlagValue(args, name, std::to_string(fallback));
  int value = 0;
  if (!absl::SimpleAtoi(text, &value) || value <= 0) {
    return absl::InvalidArgumentError(
        name + " must be a positive integer, got '" + text + "'");
  }
  return value;
}

// Runs `fn` until it succeeds or fails with a status `retry` does not accept,
// for at most `seconds`.
inline absl::Status RetryWhile(const std::function<absl::Status()>& fn,
                               bool (*retry)(const absl::Status&),
                               int seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (true) {
    absl::Status s = fn();
    if (!retry(s) || std::chrono::steady_clock::now() > deadline) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// Retries while a task of the cluster has not started yet (UNAVAILABLE).
inline absl::Status RetryWhileUnavailable(
    const std::function<absl::Status()>& fn, int seconds) {
  return RetryWhile(fn, absl::IsUnavailable, seconds);
}

// Retries while a task has not started or the chief has not initialized the
// variables yet (FAILED_PRECONDITION): how a worker other than the chief
// waits for the model.
inline absl::Status RetryWhileNotReady(const std::function<absl::Status()>& fn,
                                       int seconds) {
  return RetryWhile(
      fn,
      [](const absl::Status& s) {
        return absl::IsUnavailable(s) || absl::IsFailedPrecondition(s);
      },
      seconds);
}

// Prints the error and returns 1: `return Fail(status);` from main.
inline int Fail(const absl::Status& s) {
  std::cerr << "error: " << s << "\n";
  return 1;
}

}  // namespace examples

#endif  // DISTFLOW_EXAMPLES_EXAMPLE_UTIL_H_
