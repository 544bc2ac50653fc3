// `distflow server`: the standard server of a task that runs no client code
// of its own, such as a ps task.
#ifndef DISTFLOW_TOOLS_DISTFLOW_SERVER_COMMAND_H_
#define DISTFLOW_TOOLS_DISTFLOW_SERVER_COMMAND_H_

#include "CLI/CLI.hpp"

namespace distflow {
namespace tools {

// Registers the `server` subcommand on `app`.
void AddServerCommand(CLI::App& app);

}  // namespace tools
}  // namespace distflow

#endif  // DISTFLOW_TOOLS_DISTFLOW_SERVER_COMMAND_H_
