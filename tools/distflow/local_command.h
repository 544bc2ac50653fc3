// `distflow local`: runs a whole cluster of a training program on this
// machine, one process per task.
#ifndef DISTFLOW_TOOLS_DISTFLOW_LOCAL_COMMAND_H_
#define DISTFLOW_TOOLS_DISTFLOW_LOCAL_COMMAND_H_

#include "CLI/CLI.hpp"

namespace distflow {
namespace tools {

// Adds the `local` subcommand to `app`. When it runs, it reports its exit
// status by throwing CLI::RuntimeError(status) (see main.cc).
void AddLocalCommand(CLI::App& app);

}  // namespace tools
}  // namespace distflow

#endif  // DISTFLOW_TOOLS_DISTFLOW_LOCAL_COMMAND_H_
