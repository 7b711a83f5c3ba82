// What inferdesk-cli says when it is run without a command it knows (e.g. with an option meant for
// the desktop app, `inferdesk --data-dir DIR`): the commands there are and where the GUI is,
// instead of CLI11's bare "A subcommand is required".
#pragma once

#include <CLI/CLI.hpp>

namespace inferdesk::cli {

// Exit status of a usage error (the shell convention).
inline constexpr int kUsageExitStatus = 2;

// When `app` was given no command or an unknown one, prints the explanation to stderr and returns
// true; false for every other parse error (a command's own options: CLI11 reports those).
bool explain_missing_command(CLI::App& app);

}  // namespace inferdesk::cli
