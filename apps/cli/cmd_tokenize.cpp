// Placeholder until this subcommand is implemented.
#include "apps/cli/commands.h"

namespace inferdesk::cli {
void register_tokenize(CLI::App&) {}
}  // namespace inferdesk::cli
