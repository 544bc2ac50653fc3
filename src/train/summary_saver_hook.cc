// SummarySaverHook, and merging every summary of a graph into one.
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "distflow/ops/summary_ops.h"
#include "distflow/train/hooks.h"
#include "distflow/train/summary.h"
#include "graph/graph.h"
#include "train/hook_util.h"

namespace distflow {
namespace train {
namespace {

bool IsSummary(const Node& node) {
  return node.op() == "ScalarSummary" || node.op() == "MergeSummary";
}

}  // namespace

Output MergeAllSummaries(const Scope& scope) {
  // The graph keeps no list of summaries: find them by op type, leaving out
  // those already merged into another (their values would repeat a tag).
  std::vector<Input> roots;
  for (const auto& node : scope.graph()->nodes()) {
    if (node == nullptr || !IsSummary(*node)) continue;
    bool merged = false;
    for (const OutEdge& e : node->out_edges()) {
      if (!e.is_control() && e.dst->op() == "MergeSummary") merged = true;
    }
    if (!merged) roots.push_back(Output(node.get(), 0));
  }
  if (roots.empty()) return Output();
  if (roots.size() == 1) return roots[0].output();
  return ops::MergeSummary(
      scope.WithNoControlDependencies().WithOpName("merged_summaries"), roots);
}

std::unique_ptr<SummarySaverHook> SummarySaverHook::Create(
    const Options& options) {
  return std::unique_ptr<SummarySaverHook>(new SummarySaverHook(options));
}

absl::Status SummarySaverHook::Begin(const Scope& scope) {
  DF_RETURN_IF_ERROR(options_.every.Validate("SummarySaverHook"));
  if (options_.writer == nullptr) {
    return absl::InvalidArgumentError(
        "SummarySaverHook: give a writer (SummaryWriter::Create(logdir))");
  }
  DF_ASSIGN_OR_RETURN(global_step_, GlobalStepFor(scope, "SummarySaverHook"));
  if (!options_.summary_op.valid()) {
    options_.summary_op = MergeAllSummaries(scope);
    if (!options_.summary_op.valid()) {
      return absl::FailedPreconditionError(
          "SummarySaverHook: the graph has no summaries; add some with "
          "ops::ScalarSummary, or give a summary_op");
    }
  }
  scope_ = scope;
  return scope.status();
}

absl::Status SummarySaverHook::AfterCreateSession(ClientSession* session) {
  if (graph_written_) return absl::OkStatus();
  graph_written_ = true;
  DF_RETURN_IF_ERROR(options_.writer->AddGraph(*scope_));
  return options_.writer->Flush();
}

SessionRunArgs SummarySaverHook::BeforeRun(SessionRunContext* context) {
  // Whether this step is due is known only after it read the global step:
  // guess from the last step's value, as the summary must run in the step.
  summarizing_this_step_ = !next_step_.has_value() || timer_.Due(*next_step_);
  SessionRunArgs args;
  args.fetches.push_back(global_step_);
  if (summarizing_this_step_) args.fetches.push_back(options_.summary_op);
  return args;
}

absl::Status SummarySaverHook::AfterRun(SessionRunContext* context,
                                        const SessionRunValues& values) {
  const int64_t step = values.results[0].scalar<int64_t>();
  next_step_ = step + 1;
  if (!summarizing_this_step_) return absl::OkStatus();
  timer_.Fire(step);
  DF_RETURN_IF_ERROR(options_.writer->AddSummary(values.results[1], step));
  return options_.writer->Flush();
}

absl::Status SummarySaverHook::End(ClientSession* session) {
  return options_.writer->Flush();
}

}  // namespace train
}  // namespace distflow
