#!/usr/bin/env bash
# Install dependencies, build, and start the desktop app `inferdesk` (arguments are passed to it,
# e.g. --data-dir DIR or --help). Without a display it says so and points to the command-line
# tool, build/apps/cli/inferdesk-cli.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
exec ./build/gui/inferdesk "$@"
