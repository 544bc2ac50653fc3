// Hooks that report on training as it runs: named tensors
// (LoggingTensorHook) and speed (StepCounterHook).
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "distflow/train/hooks.h"
#include "distflow/train/summary.h"
#include "train/hook_util.h"

namespace distflow {
namespace train {

std::unique_ptr<LoggingTensorHook> LoggingTensorHook::Create(
    NamedOutputs tensors, Every every) {
  return std::unique_ptr<LoggingTensorHook>(
      new LoggingTensorHook(std::move(tensors), every));
}

absl::Status LoggingTensorHook::Begin(const Scope& scope) {
  DF_RETURN_IF_ERROR(every_.Validate("LoggingTensorHook"));
  if (tensors_.empty()) {
    return absl::InvalidArgumentError(
        "LoggingTensorHook: give at least one tensor to log");
  }
  for (const auto& [name, output] : tensors_) {
    if (!output.valid()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "LoggingTensorHook: the tensor to log as '", name, "' is invalid"));
    }
  }
  return absl::OkStatus();
}

SessionRunArgs LoggingTensorHook::BeforeRun(SessionRunContext* context) {
  // This worker's own steps count here, not the global step: the hook logs
  // what this worker sees.
  logging_this_step_ = timer_.Due(iteration_);
  SessionRunArgs args;
  if (logging_this_step_) {
    for (const auto& named : tensors_) args.fetches.push_back(named.second);
  }
  return args;
}

absl::Status LoggingTensorHook::AfterRun(SessionRunContext* context,
                                         const SessionRunValues& values) {
  if (logging_this_step_) {
    std::string line;
    for (size_t i = 0; i < tensors_.size(); ++i) {
      absl::StrAppend(&line, i == 0 ? "" : ", ", tensors_[i].first, " = ",
                      values.results[i].DebugString());
    }
    auto since = timer_.Fire(iteration_);
    if (since.has_value()) {
      absl::StrAppendFormat(&line, " (%.3f sec)",
                            absl::ToDoubleSeconds(since->second));
    }
    DF_LOG(Info) << line;
  }
  ++iteration_;
  return absl::OkStatus();
}

std::unique_ptr<StepCounterHook> StepCounterHook::Create(
    const Options& options) {
  return std::unique_ptr<StepCounterHook>(new StepCounterHook(options));
}

absl::Status StepCounterHook::Begin(const Scope& scope) {
  DF_RETURN_IF_ERROR(options_.every.Validate("StepCounterHook"));
  if (options_.examples_per_step < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("StepCounterHook: examples_per_step must not be "
                     "negative (got ",
                     options_.examples_per_step, ")"));
  }
  DF_ASSIGN_OR_RETURN(global_step_, GlobalStepFor(scope, "StepCounterHook"));
  return absl::OkStatus();
}

absl::Status StepCounterHook::AfterCreateSession(ClientSession* session) {
  // Time spent re-creating the session is no training speed: measure anew.
  timer_.Reset();
  return absl::OkStatus();
}

SessionRunArgs StepCounterHook::BeforeRun(SessionRunContext* context) {
  return SessionRunArgs{{global_step_}, {}, {}};
}

absl::Status StepCounterHook::AfterRun(SessionRunContext* context,
                                       const SessionRunValues& values) {
  const int64_t step = values.results[0].scalar<int64_t>();
  if (!timer_.Due(step)) return absl::OkStatus();
  auto since = timer_.Fire(step);
  if (!since.has_value() || since->first <= 0) return absl::OkStatus();
  const double secs = absl::ToDoubleSeconds(since->second);
  if (secs <= 0) return absl::OkStatus();
  const double steps_per_sec = since->first / secs;
  std::string line = absl::StrFormat("global_step/sec: %.4g", steps_per_sec);
  if (options_.examples_per_step > 0) {
    absl::StrAppendFormat(&line, ", examples/sec: %.4g",
                          steps_per_sec * options_.examples_per_step);
  }
  DF_LOG(Info) << line << " (global step " << step << ")";
  if (options_.writer == nullptr) return absl::OkStatus();
  SummaryWriter& writer = *options_.writer;
  DF_RETURN_IF_ERROR(writer.AddScalar("global_step/sec", steps_per_sec, step));
  if (options_.examples_per_step > 0) {
    DF_RETURN_IF_ERROR(writer.AddScalar(
        "examples/sec", steps_per_sec * options_.examples_per_step, step));
  }
  return writer.Flush();
}

}  // namespace train
}  // namespace distflow
