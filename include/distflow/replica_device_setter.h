// The replica device setter: a device function that puts a model's state on the
// parameter-server tasks and everything else on this worker.
//
//   Scope s = root.WithDeviceFunction(
//       ReplicaDeviceSetter(task.cluster, "/job:worker/task:0"));
//   auto w = ops::Variable(s, ...);   // "/job:ps/task:0"
//   auto b = ops::Variable(s, ...);   // "/job:ps/task:1" (with two ps tasks)
//   auto y = ops::MatMul(s, x, w);    // "/job:worker/task:0"
//
// Placement follows TensorFlow 1.x's replica_device_setter:
// - ops of the state types (ps_ops: variable handles by default) request the ps
//   device with the task chosen by the strategy; every other op requests the
//   worker device;
// - fields already requested for the op take precedence: the function sees the
//   device that the enclosing scopes requested (op.device()) and only fills in
//   the fields left unset. A state op already requested on another job (such
//   as "/job:worker") keeps that job, gets no ps task and uses up no turn of
//   the strategy;
// - device scopes nested inside the setter's scope override its choice field
//   by field (see Scope::WithDevice): s.WithDevice("/task:2") puts a variable
//   on ps task 2. The setter cannot see those inner requests, so to pin a
//   state op to another job from inside its scope name the task as well
//   ("/job:worker/task:0"), or the ps task chosen by the strategy remains;
// - ops colocated with a variable (its read, its assignments, its initial
//   value: see Scope::ColocateWith) are not placed by device functions at all:
//   they take the variable's device, so they run where the variable lives.
//
// The returned function keeps the strategy's state (the next task, the bytes
// placed per task) shared by all its copies: use one setter per graph, and
// build a graph on one thread, as Scope requires.
#ifndef DISTFLOW_REPLICA_DEVICE_SETTER_H_
#define DISTFLOW_REPLICA_DEVICE_SETTER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "distflow/cluster.h"
#include "distflow/scope.h"

namespace distflow {

// How the setter chooses a ps task for each state op.
enum class PsStrategy {
  // Task 0, 1, ..., n-1, 0, ... in creation order.
  kRoundRobin,
  // The task with the fewest bytes placed so far (the lowest index on ties);
  // bytes are those of StateOpByteSize. Balances a model whose variables
  // differ in size, such as one large embedding and many small biases.
  kGreedyByBytes,
};

struct ReplicaDeviceSetterOptions {
  // The device of the ps tasks; its job names the ps job of the cluster.
  std::string ps_device = "/job:ps";
  // Op types placed on ps tasks. Add the types of other state kept on ps tasks
  // (such as gradient accumulators) here.
  std::vector<std::string> ps_ops = {"VarHandleOp"};
  PsStrategy strategy = PsStrategy::kRoundRobin;
  // If set, chooses the ps task (0 .. ps tasks - 1) of each state op instead
  // of `strategy`; called once per state op that goes to the ps job.
  std::function<int(const Operation&)> custom_strategy;
  // If false, an op whose enclosing scopes requested any device keeps exactly
  // that request (the setter adds nothing).
  bool merge_devices = true;
};

// The bytes of the state a state op creates: the element size of its "dtype"
// attribute times the elements of its "shape" attribute. Unknown dimensions
// count as 1, and element types without a fixed size (strings) as 1 byte per
// element, so that such variables still take a share of the load.
int64_t StateOpByteSize(const Operation& op);

// A device function placing state ops on the ps tasks of `cluster` (the job of
// options.ps_device, "ps" by default) and every other op on `worker_device`
// (such as "/job:worker/task:1", or the seeds' "/job:worker/task:0/cpu:0/").
// If the cluster has no ps job the function requests nothing for any op, as
// TensorFlow does. A malformed worker_device or ps_device is reported by the
// scope (INVALID_ARGUMENT naming the string) when the first op that would use
// it is created.
DeviceFunction ReplicaDeviceSetter(
    const ClusterSpec& cluster,
    const std::string& worker_device = "/job:worker",
    const ReplicaDeviceSetterOptions& options = {});
// The same with only the strategy changed.
DeviceFunction ReplicaDeviceSetter(const ClusterSpec& cluster,
                                   const std::string& worker_device,
                                   PsStrategy strategy);
// The same without a cluster: `ps_tasks` ps tasks (0: request nothing).
DeviceFunction ReplicaDeviceSetter(int ps_tasks,
                                   const std::string& worker_device,
                                   const ReplicaDeviceSetterOptions& options);

}  // namespace distflow

#endif  // DISTFLOW_REPLICA_DEVICE_SETTER_H_
