// The cluster and task of a process that Slurm's srun started, from the
// variables Slurm sets for it.
#ifndef DISTFLOW_DISTRIBUTED_SLURM_CONFIG_H_
#define DISTFLOW_DISTRIBUTED_SLURM_CONFIG_H_

#include "absl/status/statusor.h"
#include "distflow/cluster.h"

namespace distflow {

// The port of a node's first task when none is given; its other tasks take the
// ports after it.
constexpr int kDefaultSlurmBasePort = 2222;

// Reads the job's layout from
//   SLURM_PROCID             this task's rank, 0..ntasks-1
//   SLURM_STEP_NUM_TASKS     the number of tasks (else SLURM_NTASKS, else
//                            SLURM_NPROCS)
//   SLURM_STEP_NODELIST      the nodes, as a hostlist such as node[01-04]
//                            (else SLURM_JOB_NODELIST, else SLURM_NODELIST)
//   SLURM_STEP_TASKS_PER_NODE  tasks of each node, such as 2(x3),1 (else
//                            SLURM_TASKS_PER_NODE, else SLURM_NTASKS_PER_NODE
//                            for every node, else ntasks spread evenly)
// and checks SLURM_NODEID and SLURM_LOCALID, when set, against it.
//
// Ranks fill the nodes in order (srun's block distribution): a node's tasks
// listen on base_port, base_port + 1, ... The first `ps_count` ranks are the
// ps tasks, the rest the workers, and worker 0 is the chief.
//
// INVALID_ARGUMENT naming the variable and its value for a missing or
// malformed variable, node and task counts that disagree, a rank placed
// elsewhere than the block distribution puts it (srun --distribution=cyclic),
// a ps_count leaving no worker, or ports beyond 65535.
absl::StatusOr<TaskConfig> TaskConfigFromSlurm(const EnvironmentVariables& env,
                                               int ps_count, int base_port);

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_SLURM_CONFIG_H_
