// Ports for the tasks of a local cluster.
#ifndef DISTFLOW_TOOLS_DISTFLOW_FREE_PORTS_H_
#define DISTFLOW_TOOLS_DISTFLOW_FREE_PORTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace distflow {
namespace tools {

// `count` distinct TCP ports that are free on the IPv4 address `host` now,
// chosen by the kernel. They are released before returning, so another
// process may take one before the task that should listen on it does; the
// task then fails saying the port is in use, and running again picks others.
absl::StatusOr<std::vector<int>> PickFreePorts(const std::string& host,
                                               int count);

}  // namespace tools
}  // namespace distflow

#endif  // DISTFLOW_TOOLS_DISTFLOW_FREE_PORTS_H_
