// The `distflow` command: one subcommand per job, each registered by its own
// Add*Command function.
#include "CLI/CLI.hpp"
#include "tools/distflow/graph_command.h"
#include "tools/distflow/inspect_command.h"
#include "tools/distflow/local_command.h"
#include "tools/distflow/server_command.h"

int main(int argc, char** argv) {
  CLI::App app{
      "distflow: run and look into distributed training jobs.\n"
      "Run 'distflow SUBCOMMAND --help' for a subcommand's flags and an "
      "example."};
  app.require_subcommand(1);
  distflow::tools::AddLocalCommand(app);
  distflow::tools::AddServerCommand(app);
  distflow::tools::AddInspectCommand(app);
  distflow::tools::AddGraphCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // a subcommand's own exit status
  } catch (const CLI::ParseError& e) {
    // --help exits 0; every command-line error exits 2, as usage errors do
    // in most Unix tools (CLI11's own codes start at 100).
    return app.exit(e) == 0 ? 0 : 2;
  }
  return 0;
}
