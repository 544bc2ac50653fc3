// `distflow inspect`: what a checkpoint holds (the global step, and each
// tensor's dtype, shape and value range).
#ifndef DISTFLOW_TOOLS_DISTFLOW_INSPECT_COMMAND_H_
#define DISTFLOW_TOOLS_DISTFLOW_INSPECT_COMMAND_H_

#include "CLI/CLI.hpp"

namespace distflow {
namespace tools {

// Registers the `inspect` subcommand on `app`.
void AddInspectCommand(CLI::App& app);

}  // namespace tools
}  // namespace distflow

#endif  // DISTFLOW_TOOLS_DISTFLOW_INSPECT_COMMAND_H_
