// Hooks that end training: at a step (StopAtStepHook), or when the loss
// stops being a number (NanTensorHook).
#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "distflow/train/global_step.h"
#include "distflow/train/hooks.h"
#include "train/hook_util.h"

namespace distflow {
namespace train {

std::unique_ptr<StopAtStepHook> StopAtStepHook::Create(int64_t last_step) {
  return std::unique_ptr<StopAtStepHook>(
      new StopAtStepHook(last_step, std::nullopt));
}

std::unique_ptr<StopAtStepHook> StopAtStepHook::ForNumSteps(int64_t num_steps) {
  return std::unique_ptr<StopAtStepHook>(
      new StopAtStepHook(std::nullopt, num_steps));
}

absl::Status StopAtStepHook::Begin(const Scope& scope) {
  if (num_steps_.has_value() && *num_steps_ < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("StopAtStepHook: num_steps must not be negative (got ",
                     *num_steps_, ")"));
  }
  DF_ASSIGN_OR_RETURN(global_step_, GlobalStepFor(scope, "StopAtStepHook"));
  return absl::OkStatus();
}

absl::Status StopAtStepHook::AfterCreateSession(ClientSession* session) {
  // Counted from the first session only: a session created again after a
  // failure must not move the goal.
  if (last_step_.has_value()) return absl::OkStatus();
  DF_ASSIGN_OR_RETURN(int64_t step, ReadGlobalStep(session, global_step_));
  last_step_ = step + *num_steps_;
  return absl::OkStatus();
}

SessionRunArgs StopAtStepHook::BeforeRun(SessionRunContext* context) {
  return SessionRunArgs{{global_step_}, {}, {}};
}

absl::Status StopAtStepHook::AfterRun(SessionRunContext* context,
                                      const SessionRunValues& values) {
  // The value read in the step may predate the step's own increment: when
  // it says the goal may have been reached, read the step again to be sure.
  const int64_t seen = values.results[0].scalar<int64_t>();
  if (seen + 1 < *last_step_) return absl::OkStatus();
  int64_t step = seen;
  if (seen < *last_step_) {
    DF_ASSIGN_OR_RETURN(step, ReadGlobalStep(context->session(), global_step_));
  }
  if (step >= *last_step_) context->RequestStop();
  return absl::OkStatus();
}

std::unique_ptr<NanTensorHook> NanTensorHook::Create(Output loss,
                                                     bool fail_on_nan_loss) {
  return std::unique_ptr<NanTensorHook>(
      new NanTensorHook(loss, fail_on_nan_loss));
}

absl::Status NanTensorHook::Begin(const Scope& scope) {
  if (!loss_.valid()) {
    return absl::InvalidArgumentError("NanTensorHook: the loss is invalid");
  }
  if (loss_.dtype() != DataType::kFloat && loss_.dtype() != DataType::kDouble) {
    return absl::InvalidArgumentError(absl::StrCat(
        "NanTensorHook: the loss '", loss_.name(), "' is ",
        DataTypeName(loss_.dtype()), "; it must be float32 or float64"));
  }
  auto step = GetGlobalStep(scope);
  if (step.ok()) global_step_ = *step;
  return absl::OkStatus();
}

SessionRunArgs NanTensorHook::BeforeRun(SessionRunContext* context) {
  SessionRunArgs args;
  args.fetches.push_back(loss_);
  if (global_step_.has_value()) args.fetches.push_back(*global_step_);
  return args;
}

namespace {
template <typename T>
bool AllFinite(const Tensor& t) {
  for (T v : t.flat<T>()) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}
}  // namespace

absl::Status NanTensorHook::AfterRun(SessionRunContext* context,
                                     const SessionRunValues& values) {
  const Tensor& loss = values.results[0];
  const bool finite = loss.dtype() == DataType::kFloat
                          ? AllFinite<float>(loss)
                          : AllFinite<double>(loss);
  if (finite) return absl::OkStatus();
  const std::string at = global_step_.has_value()
                             ? absl::StrCat(" at global step ",
                                            values.results[1].scalar<int64_t>())
                             : "";
  const std::string what =
      absl::StrCat("the loss '", loss_.name(), "' is ", loss.DebugString(), at,
                   ": training diverged; lower the learning rate or check "
                   "the input data");
  if (fail_) return absl::InvalidArgumentError(what);
  DF_LOG(Warning) << what << "; stopping";
  context->RequestStop();
  return absl::OkStatus();
}

}  // namespace train
}  // namespace distflow
