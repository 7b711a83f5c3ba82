#!/usr/bin/env bash
# What issues 27 and 29 still need shown on a GPU, in one call: the FP8 engine tests (FP8 KV cache
# through the engine, the FP8 golden fixtures on CUDA) and the quantization report with tok/s
# before and after (`inferdesk-cli quantize --report --backend cuda`, what the download wizard
# runs on a GPU; on the golden models that have a tokenizer). Builds into build-gpu unless BIN
# names prebuilt binaries; logs in $LOG_DIR.
#
#   bash tools/gpu/fp8_followup.sh
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
LOG_DIR="${LOG_DIR:-$ROOT/gpu-logs}"
mkdir -p "$LOG_DIR"
export INFERDESK_SOURCE_DIR="$ROOT"
if [[ -z "${BIN:-}" ]]; then
  BIN="$ROOT/build-gpu"
  cmake -S "$ROOT" -B "$BIN" -G Ninja -DCMAKE_BUILD_TYPE=Release -DINFERDESK_WITH_GUI=OFF \
    -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" ${CMAKE_ARGS:-} > "$LOG_DIR/configure.log" 2>&1 || exit 1
  cmake --build "$BIN" -j "$(nproc)" --target inferdesk-cli inferdesk-cuda test_gpu_engine \
    > "$LOG_DIR/build.log" 2>&1 || { tail -30 "$LOG_DIR/build.log"; exit 1; }
fi
find_bin() { find "$BIN" -type f -name "$1" | head -1; }
status=0
timeout 240 "$(find_bin test_gpu_engine)" --gtest_filter='*Fp8*:*KvFp8*' --gtest_brief=1 > "$LOG_DIR/engine_fp8.log" 2>&1 ||
  status=1
grep -E '^\[  (PASSED|FAILED)|figures' "$LOG_DIR/engine_fp8.log"
for m in tiny-chat tiny-chat-padded; do
  timeout 120 "$(find_bin inferdesk-cli)" quantize --model "$ROOT/tests/golden/models/$m" --report --backend cuda \
    --json > "$LOG_DIR/report_$m.json" 2> "$LOG_DIR/report_$m.err" || status=1
  echo "$m: $(cat "$LOG_DIR/report_$m.json")"
done
exit $status
