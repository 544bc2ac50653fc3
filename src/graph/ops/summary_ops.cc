// Summaries for TensorBoard: ScalarSummary and MergeSummary.
#include <vector>

#include "absl/strings/str_cat.h"
#include "distflow/ops.h"
#include "graph/node_builder.h"
#include "graph/ops/op_families.h"
#include "graph/shape_inference.h"

namespace distflow {
namespace {

// Scalar inputs are checked here when their shapes are known, so that a
// misuse shows while building rather than at the first step.
absl::Status ScalarSummaryShape(InferenceContext* c) {
  const char* names[] = {"tag", "value"};
  for (int i = 0; i < 2; ++i) {
    const PartialTensorShape& s = c->input(i);
    if (!s.unknown_rank() && s.dims() != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          names[i], " must be a scalar, got shape ", s.DebugString(),
          i == 1 ? " (reduce it first, e.g. with Mean)" : ""));
    }
  }
  c->set_output(0, PartialTensorShape({}));
  return absl::OkStatus();
}

absl::Status MergeSummaryShape(InferenceContext* c) {
  for (int i = 0; i < c->num_inputs(); ++i) {
    const PartialTensorShape& s = c->input(i);
    if (!s.unknown_rank() && s.dims() != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", i, " must be a scalar summary, got shape ",
                       s.DebugString()));
    }
  }
  c->set_output(0, PartialTensorShape({}));
  return absl::OkStatus();
}

}  // namespace

void RegisterSummaryOps(OpRegistry* r) {
  AddOp(r, OpDefBuilder("ScalarSummary")
               .Input("tag", DataType::kString)
               .Input("value", "T")
               .Output("summary", DataType::kString)
               .TypeAttr("T", kNumericTypes)
               .Summary("A serialized Summary of one scalar value under tag.")
               .SetShapeFn(ScalarSummaryShape));
  AddOp(r, OpDefBuilder("MergeSummary")
               .InputList("inputs", DataType::kString, "N")
               .Output("summary", DataType::kString)
               .IntAttr("N", 1)
               .Summary("One serialized Summary with the values of all inputs.")
               .SetShapeFn(MergeSummaryShape));
}

namespace ops {

Output ScalarSummary(const Scope& scope, const Input& tag, const Input& value) {
  return NodeBuilder(scope, "ScalarSummary", "ScalarSummary")
      .Input(AsOutput(scope, tag))
      .Input(AsOutput(scope, value))
      .Finalize()
      .output(0);
}

Output MergeSummary(const Scope& scope, const std::vector<Input>& summaries) {
  std::vector<Output> inputs;
  for (const Input& s : summaries) inputs.push_back(AsOutput(scope, s));
  return NodeBuilder(scope, "MergeSummary", "MergeSummary")
      .Input(inputs)
      .Attr("N", static_cast<int64_t>(inputs.size()))
      .Finalize()
      .output(0);
}

}  // namespace ops
}  // namespace distflow
