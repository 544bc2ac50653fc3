// Op constructors for the shared state of synchronous training: gradient
// accumulators, FIFO queues and staleness barriers. Most programs use
// train::SyncReplicasOptimizer and train::BoundedStalenessOptimizer, which
// build these ops.
//
// Each is a resource on one device, created by its handle op when that op
// first runs there and shared by name: every worker of a job that builds a
// handle op of the same name (shared_name, else the node's name) on the same
// device uses the same resource. The other ops take the handle and are
// colocated with it. A handle op that finds a resource of that name declared
// differently fails with INVALID_ARGUMENT naming both.
//
// Blocking ops (take, dequeue, advance) wait without holding a thread; when
// their step is aborted (another op failed, a task died) they fail with
// CANCELLED, so a blocked step always ends.
#ifndef DISTFLOW_OPS_DATA_FLOW_OPS_H_
#define DISTFLOW_OPS_DATA_FLOW_OPS_H_

#include <string>

#include "distflow/gradients.h"
#include "distflow/scope.h"
#include "distflow/tensor_shape.h"
#include "distflow/types.h"

namespace distflow {
namespace ops {

// --- Gradient accumulators ---
//
// An accumulator sums gradients of one variable (float32 or float64, of
// `shape`) and hands out their average. It has a global step: a gradient
// applied with a local step older than it is stale and silently dropped.
// Taking the average starts a new round and advances the global step by one,
// so gradients of the round just taken are dropped from then on.

// A dense accumulator (a handle).
Output ConditionalAccumulator(const Scope& scope, DataType dtype,
                              const PartialTensorShape& shape,
                              const std::string& shared_name = "");
// A sparse accumulator (a handle): gradients are IndexedSlices, summed row by
// row; the average divides every row by the number of gradients (a row that a
// gradient does not list counts as zero for it, as in the dense average).
Output SparseConditionalAccumulator(const Scope& scope, DataType dtype,
                                    const PartialTensorShape& shape,
                                    const std::string& shared_name = "");

// Adds `gradient`, computed at `local_step` (an int64 scalar), unless it is
// stale. A gradient that does not fit the accumulator's shape is
// INVALID_ARGUMENT naming the accumulator and both shapes.
Operation AccumulatorApplyGradient(const Scope& scope, const Output& handle,
                                   const Input& local_step,
                                   const Input& gradient);
// The sparse form: `indices` (int32 or int64 [n]) and `values` ([n, row...]).
// An index outside the accumulator's rows is INVALID_ARGUMENT.
Operation SparseAccumulatorApplyGradient(const Scope& scope,
                                         const Output& handle,
                                         const Input& local_step,
                                         const Input& indices,
                                         const Input& values);

// Waits until `num_required` (an int32 scalar >= 1) gradients have been
// applied in this round, then yields the average of all of them (there may
// be more than num_required), empties the accumulator and advances its
// global step. Fails with CANCELLED if the accumulator is or gets closed.
Output AccumulatorTakeGradient(const Scope& scope, const Output& handle,
                               const Input& num_required);
// The sparse form: sorted unique int64 indices, their averaged rows and the
// dense shape (int32).
IndexedSlices SparseAccumulatorTakeGradient(const Scope& scope,
                                            const Output& handle,
                                            const Input& num_required);

// Sets the global step (an int64 scalar) and reopens a closed accumulator:
// how a chief (re)starts aggregation at the job's global step.
Operation AccumulatorSetGlobalStep(const Scope& scope, const Output& handle,
                                   const Input& new_global_step);
// The number of gradients applied in this round (an int32 scalar).
Output AccumulatorNumAccumulated(const Scope& scope, const Output& handle);
// Makes waiting and later takes fail with CANCELLED until the next
// AccumulatorSetGlobalStep; gradients are still accepted. How a chief's
// aggregation loop is stopped.
Operation AccumulatorClose(const Scope& scope, const Output& handle);

// --- FIFO queues ---
//
// An unbounded first-in first-out queue of tensors of one dtype and element
// shape (dimensions may be unknown).

// A queue (a handle).
Output FIFOQueue(const Scope& scope, DataType dtype,
                 const PartialTensorShape& element_shape,
                 const std::string& shared_name = "");
// Appends one element; CANCELLED once the queue is closed; INVALID_ARGUMENT
// naming the queue for an element of another dtype or shape.
Operation QueueEnqueue(const Scope& scope, const Output& queue,
                       const Input& element);
// Appends every slice of `elements` along dimension 0, in order.
Operation QueueEnqueueMany(const Scope& scope, const Output& queue,
                           const Input& elements);
// Removes and yields the first element, waiting for one if the queue is
// empty; OUT_OF_RANGE once the queue is closed and empty.
Output QueueDequeue(const Scope& scope, const Output& queue);
// The number of elements queued (an int32 scalar).
Output QueueSize(const Scope& scope, const Output& queue);
// Refuses later enqueues and fails waiting dequeues of an empty queue with
// OUT_OF_RANGE; queued elements can still be dequeued.
Operation QueueClose(const Scope& scope, const Output& queue);

// --- Staleness barriers ---
//
// Per-worker step counters of `num_workers` asynchronous workers that keep
// them within `max_staleness` (>= 0) steps of each other: a worker that
// finishes its step c waits until every other active worker has finished step
// c - max_staleness. While it runs step c + 1, the slowest runs step
// c - max_staleness + 1 or later.

// A staleness barrier (a handle).
Output StalenessBarrier(const Scope& scope, int num_workers,
                        int64_t max_staleness,
                        const std::string& shared_name = "");
// Counts a finished step of worker `worker` (0 <= worker < num_workers), then
// waits as above; yields the worker's count of steps (an int64 scalar).
Output StalenessBarrierAdvance(const Scope& scope, const Output& barrier,
                               int worker);
// Leaves `worker` out of the slowest until it advances again (it finished
// training), so that the others no longer wait for it.
Operation StalenessBarrierRetire(const Scope& scope, const Output& barrier,
                                 int worker);
// Every worker's count of finished steps (an int64 vector [num_workers]).
Output StalenessBarrierSteps(const Scope& scope, const Output& barrier);

}  // namespace ops
}  // namespace distflow

#endif  // DISTFLOW_OPS_DATA_FLOW_OPS_H_
