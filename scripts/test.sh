#!/usr/bin/env bash
# Install dependencies, build, and run every test (gpu tests skip themselves without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
cd build
ctest --output-on-failure --timeout 1200 "$@"
