#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "distflow/train/hooks.h"

namespace distflow {
namespace train {

std::unique_ptr<FinalOpsHook> FinalOpsHook::Create(
    std::vector<Output> final_ops, ClientSession::FeedDict feeds) {
  return std::unique_ptr<FinalOpsHook>(
      new FinalOpsHook(std::move(final_ops), std::move(feeds)));
}

absl::Status FinalOpsHook::Begin(const Scope& scope) {
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (!ops_[i].valid()) {
      return absl::InvalidArgumentError(
          absl::StrCat("FinalOpsHook: final op ", i, " is invalid"));
    }
  }
  return absl::OkStatus();
}

absl::Status FinalOpsHook::End(ClientSession* session) {
  if (ops_.empty()) return absl::OkStatus();
  DF_ASSIGN_OR_RETURN(values_, session->Run(feeds_, ops_));
  return absl::OkStatus();
}

}  // namespace train
}  // namespace distflow
