#!/usr/bin/env bash
# Install dependencies, build, and run every test (gpu tests skip themselves without a GPU), then
# the fuzz step (scripts/fuzz.sh: its own clang build, the corpus replays and FUZZ_SECONDS of
# fuzzing per target; INFERDESK_FUZZ_STEP=0 skips it), then print tools/lint/size_report.sh
# (informational; the exit status is ctest's and the fuzz step's).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
status=0
(cd build && ctest --output-on-failure --timeout 1200 "$@") || status=$?
if [ "${INFERDESK_FUZZ_STEP:-1}" != 0 ]; then
  echo
  echo "===== fuzz step (scripts/fuzz.sh) ====="
  bash scripts/fuzz.sh || { echo "===== fuzz step FAILED ====="; [ "$status" -ne 0 ] || status=1; }
fi
# Informational only: never changes this script's exit status.
echo
echo "===== size report (not failing): files > 800 lines, functions > 80 lines ====="
bash tools/lint/size_report.sh || true
echo "===== end of size report; exit status (ctest, fuzz step): $status ====="
exit "$status"
