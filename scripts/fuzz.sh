#!/usr/bin/env bash
# The fuzz step of CI (tests/fuzz/README.md): builds ./build-fuzz (clang, libFuzzer, ASan + UBSan,
# only the core libraries the targets need), replays the committed corpus and every regression
# (ctest -L fuzz), then fuzzes each target for FUZZ_SECONDS (default 30) from the committed
# corpus plus seeds made from tests/golden and the shared data. Any crash, sanitizer report,
# timeout (> 10 s per input) or memory overrun (> 2048 MB) fails it; the input is kept under
# build-fuzz/fuzz-run/artifacts/<target>/.
#   FUZZ_SECONDS=3600 scripts/fuzz.sh [target...]   # a long run of some targets
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-30}"
jobs="${FUZZ_BUILD_JOBS:-$(nproc)}"
shared="${INFERDESK_SHARED_DIR:-$(cd .. && pwd)/shared}"
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build-fuzz -G Ninja -DINFERDESK_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DINFERDESK_SHARED_DIR="$shared" "${launcher[@]}" >/dev/null
cmake --build build-fuzz --parallel "$jobs"

status=0
echo "===== fuzz: replaying the committed corpus and regressions ====="
(cd build-fuzz && INFERDESK_SHARED_DIR="$shared" ctest -L fuzz --output-on-failure) || status=1

run="build-fuzz/fuzz-run"
rm -rf "$run/seeds" "$run/artifacts"
mkdir -p "$run/seeds" "$run/corpus" "$run/artifacts"
build-fuzz/tests/fuzz/fuzz_make_seeds . "$shared" "$run/seeds"

while IFS=$'\t' read -r name bin max_len dicts; do
  if [ $# -gt 0 ] && [[ " $* " != *" $name "* ]]; then continue; fi
  dict="$run/$name.dict"
  tr ',' '\n' <<<"$dicts" | xargs cat >"$dict"
  mkdir -p "$run/corpus/$name" "$run/artifacts/$name"
  dirs=("$run/corpus/$name")
  for d in "tests/fuzz/corpus/$name" "tests/fuzz/regressions/$name" "$run/seeds/$name"; do
    [ -d "$d" ] && dirs+=("$d")
  done
  echo "===== fuzz: $name for ${seconds}s ====="
  # New inputs go to the first folder (build-fuzz/fuzz-run/corpus/<target>), never into the checkout.
  if INFERDESK_SHARED_DIR="$shared" "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -malloc_limit_mb=2048 -max_len="$max_len" -dict="$dict" -artifact_prefix="$run/artifacts/$name/" \
      -print_final_stats=1 "${dirs[@]}" >"$run/$name.log" 2>&1; then
    grep -aE '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$run/$name.log" | tr '\n' ' '
    echo
  else
    status=1
    tail -n 60 "$run/$name.log"
    echo "FUZZ FAILURE in $name: the input is in $run/artifacts/$name/ (tests/fuzz/README.md: reproduce, report)"
  fi
done <build-fuzz/fuzz_targets.txt
exit "$status"
