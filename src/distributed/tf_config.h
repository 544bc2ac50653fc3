// The task of a process from TF_CONFIG, the environment variable that
// Kubeflow's TFJob operator (and other TensorFlow launchers) give every task.
#ifndef DISTFLOW_DISTRIBUTED_TF_CONFIG_H_
#define DISTFLOW_DISTRIBUTED_TF_CONFIG_H_

#include <string>

#include "absl/status/statusor.h"
#include "distflow/cluster.h"

namespace distflow {

// Reads {"cluster": {"ps": [...], "worker": [...], ...}, "task": {"type":
// "worker", "index": 1}, "environment": "cloud"} as ParseTaskConfig documents
// (job names and type in any case, "master" read as "chief", an evaluator
// outside the cluster). Fields other than "cluster" and "task" are ignored.
// remaining_args is left empty. INVALID_ARGUMENT naming the field at fault.
absl::StatusOr<TaskConfig> TaskConfigFromTfConfig(const std::string& tf_config);

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_TF_CONFIG_H_
