// Placeholder until this subcommand is implemented.
#include "apps/cli/commands.h"

namespace inferdesk::cli {
void register_bench(CLI::App&) {}
}  // namespace inferdesk::cli
