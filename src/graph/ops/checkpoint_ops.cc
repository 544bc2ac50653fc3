// SaveShard and RestoreShard: checkpoint I/O on the device of the variables.
//
// Both take the variables' resource handles, so the placer puts each op beside
// the variables it touches (on their ps task) and no value crosses the network.
#include "graph/ops/checkpoint_ops.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/node_builder.h"
#include "graph/ops/op_families.h"
#include "graph/shape_inference.h"

namespace distflow {
namespace {

// Input 0 has rank `rank`; one tensor name per variable.
absl::Status CheckpointShardShape(InferenceContext* c, int rank) {
  DF_RETURN_IF_ERROR(c->WithRank(0, rank));
  int64_t n = 0;
  std::vector<std::string> names;
  DF_RETURN_IF_ERROR(c->GetAttr("N", &n));
  DF_RETURN_IF_ERROR(c->GetAttr("tensor_names", &names));
  if (static_cast<int64_t>(names.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("has ", n, " variables but ", names.size(),
                     " tensor names; give one name per variable"));
  }
  if (rank == 1 && c->input(0).dims() == 1 && c->input(0).dim_size(0) >= 0 &&
      c->input(0).dim_size(0) != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "has ", n, " variables but files of shape ", c->input(0).DebugString(),
        "; give one file per variable"));
  }
  return absl::OkStatus();
}

Operation CheckpointShardOp(const Scope& scope, const char* op,
                            const Output& file_input,
                            const std::vector<ops::Variable>& variables,
                            const std::vector<std::string>& tensor_names) {
  if (variables.empty()) {
    scope.UpdateStatus(
        absl::InvalidArgumentError(absl::StrCat(op, " of no variables")));
    return Operation();
  }
  std::vector<Output> handles;
  for (const ops::Variable& v : variables) handles.push_back(v.handle());
  return NodeBuilder(scope.ColocateWith(variables[0].handle().op()), op, op)
      .Input(file_input)
      .Input(handles)
      .Attr("tensor_names", tensor_names)
      .Finalize();
}

}  // namespace

void RegisterCheckpointOps(OpRegistry* r) {
  AddOp(r, OpDefBuilder("SaveShard")
               .Input("path", DataType::kString)
               .InputList("resources", DataType::kResource, "N")
               .IntAttr("N", 1)
               .Attr("tensor_names", AttrType::kStringList)
               .Stateful()
               .Summary("Writes variables into one safetensors file.")
               .SetShapeFn([](InferenceContext* c) {
                 return CheckpointShardShape(c, 0);
               }));
  AddOp(r, OpDefBuilder("RestoreShard")
               .Input("files", DataType::kString)
               .InputList("resources", DataType::kResource, "N")
               .IntAttr("N", 1)
               .Attr("tensor_names", AttrType::kStringList)
               .Stateful()
               .Summary("Assigns variables from safetensors files, each from "
                        "the file given for it.")
               .SetShapeFn([](InferenceContext* c) {
                 return CheckpointShardShape(c, 1);
               }));
}

namespace ops {

Operation SaveShard(const Scope& scope, const Output& path,
                    const std::vector<Variable>& variables,
                    const std::vector<std::string>& tensor_names) {
  return CheckpointShardOp(scope, "SaveShard", path, variables, tensor_names);
}

Operation RestoreShard(const Scope& scope, const Output& files,
                       const std::vector<Variable>& variables,
                       const std::vector<std::string>& tensor_names) {
  return CheckpointShardOp(scope, "RestoreShard", files, variables,
                           tensor_names);
}

}  // namespace ops
}  // namespace distflow
