#!/usr/bin/env bash
# What issue 27's FP8 experts need shown on a GPU, in one call (about 6 minutes on the H200): the
# MoE op tests against the CPU backend, the FP8 golden fixtures on CUDA (MoE ones included),
# compute-sanitizer memcheck on the FP8 expert tests, the moe kernel lines of bench_gpu_kernels,
# and the Qwen3-30B-A3B batch 1 / 32 and Mixtral-8x7B offline benchmarks with --quantization fp8
# beside BF16 (docs/PERF.md's arguments). Builds into build-gpu unless BIN names prebuilt
# binaries; logs in $LOG_DIR, one line per step on stdout.
#
#   bash tools/gpu/moe_fp8.sh
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
LOG_DIR="${LOG_DIR:-$ROOT/gpu-logs}"
mkdir -p "$LOG_DIR"
T0=$(date +%s)
step() { echo "[$(($(date +%s) - T0))s] $*"; }
if [[ -z "${BIN:-}" ]]; then
  BIN="$ROOT/build-gpu"
  cmake -S "$ROOT" -B "$BIN" -G Ninja -DCMAKE_BUILD_TYPE=Release -DINFERDESK_WITH_GUI=OFF \
    -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" ${CMAKE_ARGS:-} > "$LOG_DIR/configure.log" 2>&1 || exit 1
  cmake --build "$BIN" -j "$(nproc)" --target inferdesk-cli inferdesk-cuda test_gpu_moe test_gpu_engine \
    bench_gpu_kernels > "$LOG_DIR/build.log" 2>&1 || { grep -m30 -E "error|FAILED" "$LOG_DIR/build.log"; exit 1; }
  step build
fi
find_bin() { find "$BIN" -type f -name "$1" | head -1; }
MOE=$(find_bin test_gpu_moe)
status=0
timeout 120 "$MOE" --gtest_brief=1 > "$LOG_DIR/moe.log" 2>&1 || status=1
step "test_gpu_moe rc=$status"
grep -E '^\[  (PASSED|FAILED)|figures|Failure' "$LOG_DIR/moe.log" | head -60
timeout 120 "$(find_bin test_gpu_engine)" --gtest_filter='*GoldenFp8Cuda*:GoldenCuda*' --gtest_brief=1 \
  > "$LOG_DIR/engine.log" 2>&1 || status=1
step "golden rc=$status"
grep -E '^\[  (PASSED|FAILED)|figures|Failure' "$LOG_DIR/engine.log" | head -40
timeout 180 compute-sanitizer --tool memcheck --error-exitcode 9 "$MOE" --gtest_brief=1 \
  --gtest_filter='GpuMoeFp8Graph.*:GpuMoeFp8.SmallPath*:GpuMoeFp8.GroupedPath*:GpuMoeFp8.LargePathMatchesCpu:GpuMoeFp8.SizesNot*:GpuMoeFp8.Unsupported*' \
  > "$LOG_DIR/memcheck.log" 2>&1 || status=1
step "memcheck rc=$status"
grep -E 'ERROR SUMMARY|PASSED|FAILED' "$LOG_DIR/memcheck.log" | head
timeout 60 "$(find_bin bench_gpu_kernels)" moe > "$LOG_DIR/bench_moe.log" 2>&1
grep -E '^moe|SMs' "$LOG_DIR/bench_moe.log"
CLI=$(find_bin inferdesk-cli)
bench() {  # name timeout args...
  local n=$1 t=$2
  shift 2
  timeout "$t" "$CLI" bench --backend cuda "$@" --json > "$LOG_DIR/$n.json" 2> "$LOG_DIR/$n.err" || status=1
  step "$n: $(python3 -c "import json; j = json.load(open('$LOG_DIR/$n.json')); print('%.1f output tok/s, TPOT median %.2f ms, %s' % (j['output_tokens_per_s'], 1000 * j['tpot_median_s'], j['quantization']))" 2>/dev/null || tail -2 "$LOG_DIR/$n.err")"
}
Q="--dummy qwen3-30b-a3b --input-len 128 --output-len 256 --repeat 2"
MX="--dummy mixtral-8x7b --num-requests 1024 --input-len 128 --output-len 128 --max-num-seqs 1024 --max-batched-tokens 16384 --repeat 1"
for b in 32 1; do
  bench "qwen3moe_b${b}_fp8" 120 $Q --batch $b --quantization fp8
  bench "qwen3moe_b${b}_bf16" 120 $Q --batch $b
done
bench mixtral_offline_fp8 180 $MX --quantization fp8
bench mixtral_offline_bf16 180 $MX
exit $status
