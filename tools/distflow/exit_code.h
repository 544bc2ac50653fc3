// How a subcommand ends the `distflow` process with a given exit status.
//
// CLI11 runs a subcommand's callback inside App::parse; a callback ends the
// process by throwing CLI::RuntimeError with its exit status, which main()
// returns (CLI11 prints nothing for it).
#ifndef DISTFLOW_TOOLS_DISTFLOW_EXIT_CODE_H_
#define DISTFLOW_TOOLS_DISTFLOW_EXIT_CODE_H_

#include "CLI/CLI.hpp"

namespace distflow {
namespace tools {

// Exit statuses shared by the subcommands.
inline constexpr int kExitOk = 0;
// The work failed: a damaged file, a port in use, a failed RPC.
inline constexpr int kExitFailure = 1;
// The command line is wrong: an unknown or malformed flag, a missing
// argument, a task that is not in the cluster.
inline constexpr int kExitUsage = 2;

// Ends the subcommand with `code` as the process's exit status.
[[noreturn]] inline void ExitWith(int code) { throw CLI::RuntimeError(code); }

}  // namespace tools
}  // namespace distflow

#endif  // DISTFLOW_TOOLS_DISTFLOW_EXIT_CODE_H_
