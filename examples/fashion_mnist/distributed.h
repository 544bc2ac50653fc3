// The distributed mode of build/bin/fashion_mnist: one task of a cluster of
// parameter servers and workers, trained by between-graph replication.
//
// - A ps task serves the variables until the chief tells it the job is done,
//   then returns OK (the process exits 0).
// - Every worker builds the same graph: the variables (the model's, Adam's
//   slots, the global step) go round-robin onto the ps tasks through the
//   replica device setter, the computation onto the worker itself. Worker i
//   reads shard i of the training images (of as many shards as there are
//   workers), and applies its gradients as soon as they are computed
//   (asynchronous training), or, with --issync, through a
//   SyncReplicasOptimizer that averages one gradient of every worker per
//   global step (synchronous training; the chief's hook aggregates, and a
//   worker still waiting for a step when the chief has finished ends
//   cleanly).
// - Training runs in a MonitoredTrainingSession: the chief (worker 0, or the
//   task of a "chief" job) initializes the variables, or restores them from
//   the latest checkpoint of --checkpoint_dir; the others wait until the
//   model is ready; a StopAtStepHook ends every worker's loop once the global
//   step has reached --train_steps (which counts global steps), so all
//   workers stop at the same last step, give or take the steps other workers
//   had in flight. With --checkpoint_dir the chief saves a checkpoint every
//   --save_checkpoint_steps global steps (default: every 10 minutes) and
//   when its session closes.
// - The chief evaluates on the test set every --steps_to_validate global
//   steps and prints `test_accuracy=` at the end, through a session beside
//   the monitored one (evaluation is not a training step for the hooks), a
//   train::RecoverableSession: after a ps restart it too restores the latest
//   checkpoint and evaluates again.
// - Ending: every worker but the chief, once its loop has stopped, reports
//   done with a flag of its own on the ps tasks (done_reports.h), as
//   TensorFlow users do with a done queue, and keeps the report until the
//   job ends, setting it again if the ps restarts and forgets it. The chief
//   closes its monitored session (the last checkpoint), evaluates, and waits
//   until all the others have reported (or a minute has passed: a worker
//   that died will never report) before it ends the job (EndJob): the ps
//   tasks then refuse new steps and exit with status 0 once none runs, so no
//   ps task leaves while a worker still trains. A worker whose step or
//   report is refused because the job has ended (OUT_OF_RANGE) stops
//   cleanly. A chief that restarts finds the reports the ps holds: the
//   workers that reported while it was down count.
#ifndef DISTFLOW_EXAMPLES_FASHION_MNIST_DISTRIBUTED_H_
#define DISTFLOW_EXAMPLES_FASHION_MNIST_DISTRIBUTED_H_

#include "absl/status/status.h"
#include "distflow/cluster.h"
#include "examples/fashion_mnist/flags.h"

namespace fashion_mnist {

// Runs `task`'s part of the job until the job is done. INVALID_ARGUMENT for a
// job other than ps, worker or chief; the first error of the server, the data
// or a training step otherwise (each names the task or file at fault).
absl::Status RunDistributedTask(const distflow::TaskConfig& task,
                                const Flags& flags);

}  // namespace fashion_mnist

#endif  // DISTFLOW_EXAMPLES_FASHION_MNIST_DISTRIBUTED_H_
