// Pieces of cluster parsing shared by ClusterSpec and TaskConfig.
#ifndef DISTFLOW_DISTRIBUTED_CLUSTER_SPEC_INTERNAL_H_
#define DISTFLOW_DISTRIBUTED_CLUSTER_SPEC_INTERNAL_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "distflow/cluster.h"
#include "nlohmann/json.hpp"

namespace distflow {

// A job name that a device name can carry: a letter, then letters, digits or
// '_'.
bool IsValidJobName(absl::string_view name);

// OK for "host:port" (or "[v6]:port") with a non-empty host and a port in
// 0..65535; INVALID_ARGUMENT naming the address and the fault otherwise.
absl::Status ValidateAddress(absl::string_view address);

// The cluster of a parsed JSON object {"job": ["host:port", ...], ...}. Errors
// start with `what` (such as "TF_CONFIG's \"cluster\"").
absl::StatusOr<ClusterSpec> ClusterSpecFromJsonValue(
    const nlohmann::json& cluster, absl::string_view what);

// The task that initializes and checkpoints: the "chief" task if the cluster
// has that job (TF 2 / Kubeflow layouts), else worker 0 (the seeds' layout).
inline bool IsChiefTask(const ClusterSpec& cluster, absl::string_view job,
                        int index) {
  if (cluster.HasJob("chief")) return job == "chief" && index == 0;
  return job == "worker" && index == 0;
}

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_CLUSTER_SPEC_INTERNAL_H_
