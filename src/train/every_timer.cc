#include "absl/strings/str_cat.h"
#include "base/clock.h"
#include "distflow/train/hooks.h"

namespace distflow {
namespace train {

absl::Status Every::Validate(const std::string& hook) const {
  if ((steps > 0) != (secs > 0)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(hook,
                   ": give exactly one positive period, Every::Steps(n) or "
                   "Every::Secs(s) (got steps=",
                   steps, ", secs=", secs, ")"));
}

bool EveryTimer::Due(int64_t step) const {
  if (!last_.has_value()) return true;
  if (step == last_->step) return false;
  if (every_.steps > 0) return step >= last_->step + every_.steps;
  return SteadySince(last_->time) >= absl::Seconds(every_.secs);
}

std::optional<std::pair<int64_t, absl::Duration>> EveryTimer::Fire(
    int64_t step) {
  const SteadyTime now = SteadyNow();
  std::optional<std::pair<int64_t, absl::Duration>> since;
  if (last_.has_value())
    since.emplace(step - last_->step, absl::FromChrono(now - last_->time));
  last_ = Mark{step, now};
  return since;
}

}  // namespace train
}  // namespace distflow
