// `distflow graph`: a GraphDef file printed readably, devices included.
#ifndef DISTFLOW_TOOLS_DISTFLOW_GRAPH_COMMAND_H_
#define DISTFLOW_TOOLS_DISTFLOW_GRAPH_COMMAND_H_

#include "CLI/CLI.hpp"

namespace distflow {
namespace tools {

// Registers the `graph` subcommand on `app`.
void AddGraphCommand(CLI::App& app);

}  // namespace tools
}  // namespace distflow

#endif  // DISTFLOW_TOOLS_DISTFLOW_GRAPH_COMMAND_H_
