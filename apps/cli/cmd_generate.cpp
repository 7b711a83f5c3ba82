// Placeholder until this subcommand is implemented.
#include "apps/cli/commands.h"

namespace inferdesk::cli {
void register_generate(CLI::App&) {}
}  // namespace inferdesk::cli
