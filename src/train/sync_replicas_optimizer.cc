// SyncReplicasOptimizer: the graph of synchronous training. The hook that
// drives it is in sync_replicas_hook.cc.
#include "distflow/train/sync_replicas_optimizer.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "distflow/ops.h"
#include "graph/attr_value.h"
#include "graph/graph.h"
#include "graph/node_builder.h"

namespace distflow {
namespace train {
namespace {

// A worker's local step: an int64 scalar variable that no collection lists
// (the global initializer, savers and ps placement leave it alone). It lives
// beside the global step, a ps in between-graph training, where the applies
// read it and the token is dequeued: neither crosses between the worker and
// the ps every step. The workers' graphs share the node's name, so its
// resource is named after the worker's task (the device that `worker` was
// placed on) to keep their local steps apart on that ps.
ops::Variable LocalStepVariable(const Scope& scope, const Operation& worker,
                                const ops::Variable& global_step) {
  Scope local = scope.ColocateWith(global_step.handle().op());
  const std::string& device = worker.node()->requested_device();
  Operation handle = NodeBuilder(local.WithOpName("sync_rep_local_step"),
                                 "VarHandleOp", "sync_rep_local_step")
                         .Attr("dtype", DataType::kInt64)
                         .Attr("shape", PartialTensorShape(TensorShape()))
                         .Finalize();
  if (!handle.valid()) return ops::Variable();
  if (!device.empty()) {
    handle.node()->SetInternalAttr(
        "shared_name",
        MakeAttr(absl::StrCat(handle.node()->name(), ":", device)));
  }
  NodeBuilder(local.NewSubScopeOf(handle).WithOpName("read"), "ReadVariableOp",
              "read")
      .Input(handle.output(0))
      .Attr("dtype", DataType::kInt64)
      .Finalize();
  return ops::Variable::FromHandle(handle.output(0));
}

}  // namespace

SyncReplicasOptimizer::SyncReplicasOptimizer(Optimizer* optimizer,
                                             int replicas_to_aggregate,
                                             int total_num_replicas)
    : optimizer_(optimizer),
      replicas_to_aggregate_(replicas_to_aggregate),
      total_num_replicas_(total_num_replicas == -1 ? replicas_to_aggregate
                                                   : total_num_replicas) {}

int SyncReplicasOptimizer::TokensPerStep() const {
  return std::max(total_num_replicas_, replicas_to_aggregate_);
}

absl::StatusOr<std::vector<GradAndVar>> SyncReplicasOptimizer::ComputeGradients(
    const Scope& scope, const Output& loss,
    const std::vector<ops::Variable>& var_list) {
  return optimizer_->ComputeGradients(scope, loss, var_list);
}

absl::StatusOr<Operation> SyncReplicasOptimizer::Minimize(
    const Scope& scope, const Output& loss, const ops::Variable& global_step,
    const std::vector<ops::Variable>& var_list) {
  DF_ASSIGN_OR_RETURN(std::vector<GradAndVar> grads,
                      ComputeGradients(scope.WithOpName(""), loss, var_list));
  return ApplyGradients(scope, grads, global_step);
}

absl::StatusOr<Operation> SyncReplicasOptimizer::ApplyGradients(
    const Scope& scope, const std::vector<GradAndVar>& grads_and_vars,
    const ops::Variable& global_step) {
  DF_RETURN_IF_ERROR(scope.status());
  const std::string me =
      absl::StrCat("SyncReplicasOptimizer(", optimizer_->name(), ")");
  if (replicas_to_aggregate_ < 1 || total_num_replicas_ < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(me, ": replicas_to_aggregate (", replicas_to_aggregate_,
                     ") and total_num_replicas (", total_num_replicas_,
                     ") must be at least 1"));
  }
  if (built_) {
    return absl::InvalidArgumentError(
        absl::StrCat(me,
                     ": ApplyGradients was already called; use one "
                     "SyncReplicasOptimizer per train op"));
  }
  if (!global_step.handle().valid()) {
    return absl::InvalidArgumentError(absl::StrCat(
        me,
        " needs the global step: pass train::GetOrCreateGlobalStep(scope)"));
  }
  std::vector<GradAndVar> todo;
  for (const GradAndVar& gv : grads_and_vars) {
    if (gv.first.has_value()) todo.push_back(gv);
  }
  if (todo.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        me,
        ": no gradient for any variable; check that the loss depends on "
        "them"));
  }

  // Everything beside the global step (the token queue, its ops) and the
  // chief's ops stay out of the caller's control dependencies.
  Scope s = scope.WithNoControlDependencies().NewSubScope("sync_replicas");
  Scope at_step = s.ColocateWith(global_step.handle().op());
  // Placed on this worker by the caller's device function: names its task.
  Operation anchor = ops::NoOp(s.WithOpName("local_anchor"));
  local_step_ = LocalStepVariable(s, anchor, global_step);
  const Scope at_local_step = s.ColocateWith(local_step_.handle().op());
  token_queue_ =
      ops::FIFOQueue(at_step.WithOpName("token_queue"), DataType::kInt64,
                     PartialTensorShape({}), "sync_token_q");
  DF_RETURN_IF_ERROR(s.status());

  // The caller's op name belongs to the train op alone.
  Scope plain = scope.WithOpName("");
  std::vector<Operation> applies, set_steps, closes;
  std::vector<GradAndVar> averaged;
  for (const auto& [grad, var] : todo) {
    Scope v = s.NewSubScope(var.var_name()).ColocateWith(var.handle().op());
    const std::string shared = var.var_name() + "/grad_accum";
    const DataType dtype = var.dtype();
    Output acc;
    if (grad.is_sparse()) {
      const IndexedSlices& g = grad.sparse();
      acc = ops::SparseConditionalAccumulator(v.WithOpName("grad_accum"), dtype,
                                              var.shape(), shared);
      applies.push_back(ops::SparseAccumulatorApplyGradient(
          plain.ColocateWith(var.handle().op()), acc, local_step_, g.indices,
          g.values));
      averaged.push_back(
          {ops::SparseAccumulatorTakeGradient(v, acc, replicas_to_aggregate_),
           var});
    } else {
      acc = ops::ConditionalAccumulator(v.WithOpName("grad_accum"), dtype,
                                        var.shape(), shared);
      applies.push_back(
          ops::AccumulatorApplyGradient(plain.ColocateWith(var.handle().op()),
                                        acc, local_step_, grad.dense()));
      averaged.push_back(
          {ops::AccumulatorTakeGradient(v, acc, replicas_to_aggregate_), var});
    }
    set_steps.push_back(ops::AccumulatorSetGlobalStep(v, acc, global_step));
    closes.push_back(ops::AccumulatorClose(v, acc));
  }
  DF_RETURN_IF_ERROR(s.status());

  // The chief: average, apply, count the step, release the workers. Every
  // op of it lives on a ps (the takes and updates beside their variables, the
  // rest beside the global step), so that the aggregation runs there alone:
  // the end of the update does not cross to the chief's task and back before
  // the step's increment and the tokens, which would cost a round trip on
  // every step's critical path.
  DF_ASSIGN_OR_RETURN(
      Operation update,
      optimizer_->ApplyGradients(at_step.WithOpName("update"), averaged));
  Output new_step = ops::AssignAdd(
      at_step.WithControlDependencies({update}).WithOpName("advance"),
      global_step, int64_t{1});
  Output tokens =
      ops::Fill(at_step.WithOpName("tokens"),
                Tensor::Vector<int64_t>({TokensPerStep()}), new_step);
  Operation enqueue = ops::QueueEnqueueMany(
      at_step.WithOpName("release_workers"), token_queue_, tokens);
  aggregate_op_ =
      NodeBuilder(at_step.WithOpName("aggregate"), "NoOp", "aggregate")
          .ControlInput(enqueue)
          .Finalize();
  chief_init_op_ = ops::Group(s.WithOpName("chief_init"), set_steps);
  local_step_init_op_ = ops::Assign(at_local_step.WithOpName("local_step_init"),
                                    local_step_, global_step)
                            .op();
  close_accumulators_op_ =
      ops::Group(s.WithOpName("close_accumulators"), closes);
  close_token_queue_op_ =
      ops::QueueClose(at_step.WithOpName("close_token_queue"), token_queue_);

  // The worker: contribute, wait for a token, adopt it as the local step.
  // The step ends beside the global step (the train op too), so that the
  // token does not travel to the worker: the end of the ps's part of the step
  // is the end of the step.
  Output token = ops::QueueDequeue(
      at_step.WithControlDependencies(applies).WithOpName("token"),
      token_queue_);
  Output adopt =
      ops::Assign(at_local_step.WithOpName("adopt_token"), local_step_, token);
  Operation train_op =
      NodeBuilder(scope.ColocateWith(global_step.handle().op()), "NoOp",
                  "train_op")
          .ControlInput(adopt.op())
          .Finalize();
  DF_RETURN_IF_ERROR(scope.status());
  global_step_ = global_step;
  scope_ = scope.WithNoControlDependencies();
  built_ = true;
  return train_op;
}

absl::StatusOr<Operation> SyncReplicasOptimizer::GetInitTokensOp(
    int num_tokens) {
  if (!built_) {
    return absl::FailedPreconditionError(
        "SyncReplicasOptimizer: build the train op (Minimize or "
        "ApplyGradients) before the init tokens op");
  }
  const int needed = std::max(0, replicas_to_aggregate_ - total_num_replicas_);
  if (num_tokens == -1) num_tokens = needed;
  if (num_tokens < needed) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SyncReplicasOptimizer: ", num_tokens,
        " initial tokens are too few: ", total_num_replicas_,
        " workers must contribute ", replicas_to_aggregate_,
        " gradients to the first step, which needs at least ", needed));
  }
  Scope s = scope_.NewSubScope("sync_replicas")
                .ColocateWith(global_step_.handle().op());
  Operation init;
  if (num_tokens == 0) {
    init = ops::NoOp(s.WithOpName("init_tokens"));
  } else {
    Output tokens =
        ops::Fill(s.WithOpName("init_token_values"),
                  Tensor::Vector<int64_t>({num_tokens}), global_step_);
    init = ops::QueueEnqueueMany(s.WithOpName("init_tokens"), token_queue_,
                                 tokens);
  }
  DF_RETURN_IF_ERROR(s.status());
  return init;
}

}  // namespace train
}  // namespace distflow
