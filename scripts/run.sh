#!/usr/bin/env bash
# Install dependencies, build, and start the main program.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
exec ./build/apps/cli/inferdesk-cli "${@:---help}"
