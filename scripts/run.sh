#!/usr/bin/env bash
# Install dependencies, build, and start the main program: the desktop app `inferdesk` (arguments
# are passed to it, e.g. --data-dir DIR or --help). Without a display it says so and points to
# the command-line tool, build/apps/cli/inferdesk-cli. Where Qt 6 is missing the GUI is not
# built and the CLI starts instead.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
if [ -x ./build/gui/inferdesk ]; then
  exec ./build/gui/inferdesk "$@"
fi
echo "run.sh: the GUI was not built (Qt 6 Widgets + Charts not found); starting inferdesk-cli" >&2
exec ./build/apps/cli/inferdesk-cli "${@:---help}"
