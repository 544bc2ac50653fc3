#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "distflow/ops/state_ops.h"
#include "distflow/train/monitored_session.h"

namespace distflow {
namespace train {

absl::StatusOr<std::unique_ptr<Scaffold>> Scaffold::Create(
    const Scope& scope, const Options& options) {
  DF_RETURN_IF_ERROR(scope.status());
  // The scaffold's ops must run on their own, whatever the caller's scope
  // waits for.
  const Scope s = scope.WithNoControlDependencies();
  Options made = options;
  if (!made.init_op.valid()) made.init_op = ops::GlobalVariablesInitializer(s);
  if (!made.ready_op.valid()) {
    made.ready_op =
        ops::ReportUninitializedVariables(s, ops::GlobalVariables(s));
  }
  DF_RETURN_IF_ERROR(scope.status());
  if (made.ready_op.dtype() != DataType::kString ||
      made.ready_op.shape().dims() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Scaffold: the ready op '", made.ready_op.name(), "' yields ",
        DataTypeName(made.ready_op.dtype()),
        made.ready_op.shape().DebugString(),
        "; it must yield a string vector naming what is not ready"));
  }
  return std::unique_ptr<Scaffold>(new Scaffold(std::move(made)));
}

}  // namespace train
}  // namespace distflow
