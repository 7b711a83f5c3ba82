#!/usr/bin/env bash
# Builds (unless BIN is given) and runs everything that needs the GPU, in one command, on a
# machine with an NVIDIA GPU: the gpu-labelled tests, compute-sanitizer memcheck on the op tests
# and one generate run, the kernel microbenchmarks, and the engine benchmarks beside the PyTorch
# baseline. Logs go to $LOG_DIR (default ./gpu-logs); a summary table is printed at the end.
#
#   bash tools/gpu/run_all.sh                 # build in build-gpu (sm_90 by default) and run all
#   BIN=path/with/binaries bash tools/gpu/run_all.sh tests   # only the tests, prebuilt binaries
# Parts: tests, sanitizer, micro, bench, baseline, moe_baseline (default: all of them).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
LOG_DIR="${LOG_DIR:-$ROOT/gpu-logs}"
ARCH="${CUDA_ARCH:-90}"
PARTS="${*:-tests sanitizer micro bench baseline moe_baseline}"
mkdir -p "$LOG_DIR"
export INFERDESK_SOURCE_DIR="$ROOT"
SUMMARY="$LOG_DIR/summary.txt"
: > "$SUMMARY"
row() { printf '%-58s %s\n' "$1" "$2" | tee -a "$SUMMARY"; }
# "decode N tok/s" from the last JSON line a baseline script printed.
rate() { python3 -c "import json,sys; j=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); print('decode %.0f tok/s' % j['decode_tokens_per_s'])" "$1"; }

if [[ -z "${BIN:-}" ]]; then
  BUILD="$ROOT/build-gpu"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DINFERDESK_WITH_GUI=OFF \
    -DCMAKE_CUDA_ARCHITECTURES="$ARCH" > "$LOG_DIR/configure.log" 2>&1 || { row configure FAILED; exit 1; }
  cmake --build "$BUILD" -j "$(nproc)" --target inferdesk-cli inferdesk-cuda test_gpu_engine test_gpu_attention \
    test_gpu_kernels test_gpu_sampling test_gpu_moe bench_gpu_attention bench_gpu_kernels bench_gpu_sampling \
    > "$LOG_DIR/build.log" 2>&1 || { row build FAILED; tail -30 "$LOG_DIR/build.log"; exit 1; }
  find_bin() { find "$BUILD" -type f -name "$1" -perm -u+x | head -1; }
else
  find_bin() { find "$BIN" -type f -name "$1" | head -1; }
fi
CLI="$(find_bin inferdesk-cli)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader \
  > "$LOG_DIR/gpu.txt" 2>&1
row "GPU" "$(head -1 "$LOG_DIR/gpu.txt")"
status=0

for part in $PARTS; do
case "$part" in
tests)
  # The engine tests run ENGINE_REPEAT times (default 3): an intermittent difference between runs
  # of the same requests is a bug this should catch.
  for t in test_gpu_kernels test_gpu_attention test_gpu_sampling test_gpu_moe test_gpu_engine; do
    exe="$(find_bin $t)"
    repeat=1
    [[ $t == test_gpu_engine ]] && repeat="${ENGINE_REPEAT:-3}"
    if "$exe" --gtest_brief=1 --gtest_repeat="$repeat" > "$LOG_DIR/$t.log" 2>&1; then
      row "$t" "PASSED ($(grep -Eo '^\[  PASSED  \] [0-9]+ tests?' "$LOG_DIR/$t.log" | grep -Eo '[0-9]+ tests?' | head -1) x $repeat; $(grep -Eo '[0-9]+ tests?, listed below' "$LOG_DIR/$t.log" | head -1 | sed 's/, listed below/ skipped/'))"
    else
      status=1; row "$t" "FAILED (see $t.log)"; grep -E '^\[  FAILED  \]' "$LOG_DIR/$t.log" | head -20
    fi
  done ;;
sanitizer)
  if ! command -v compute-sanitizer > /dev/null; then row compute-sanitizer "not installed"; continue; fi
  # Under memcheck every kernel runs ~100x slower: the attention tests run a representative subset
  # (each decode and prefill path, head_dim 128 and 64, windows, PDL chains) and the sampling tests
  # without the long chi-square distribution checks. MEMCHECK_ALL=1 runs everything.
  attn_filter='GpuPagedDecode.*:GpuAttentionPdl.*:GpuPagedPrefill.*:GpuWindowMistral.*:*DecodeShapes.MatchesCpu/D128_G4*:*DecodeShapes.MatchesCpu/D64_G3*:*PrefillShapes*/*128*'
  samp_filter='-GpuSamplingDistribution.*'
  # The MoE tests without the two tests of Qwen3-30B-A3B's expert widths (H 2048, I 768: the same
  # kernels as the smaller cases, over 150 MB of expert weights per call).
  moe_filter='-*QwenExpertWidths*:*LargeModelWidths*'
  for t in test_gpu_kernels test_gpu_attention test_gpu_sampling test_gpu_moe; do
    filter='*'
    [[ $t == test_gpu_attention ]] && filter="$attn_filter"
    [[ $t == test_gpu_sampling ]] && filter="$samp_filter"
    [[ $t == test_gpu_moe ]] && filter="$moe_filter"
    [[ -n "${MEMCHECK_ALL:-}" ]] && filter='*'
    if compute-sanitizer --tool memcheck --error-exitcode 3 "$(find_bin $t)" --gtest_brief=1 \
        --gtest_filter="$filter" > "$LOG_DIR/memcheck_$t.log" 2>&1; then
      row "memcheck $t" "clean ($(grep -Eo '[0-9]+ tests? from [0-9]+ test suites? ran' "$LOG_DIR/memcheck_$t.log" | head -1))"
    else status=1; row "memcheck $t" "ERRORS"; fi
  done
  if compute-sanitizer --tool memcheck --error-exitcode 3 "$CLI" generate --backend cuda \
      --model "$ROOT/tests/golden/models/tiny-chat" --prompt "Hello there" --chat --max-tokens 24 \
      --json > "$LOG_DIR/memcheck_generate.log" 2>&1; then row "memcheck generate (tiny-chat)" clean
  else status=1; row "memcheck generate (tiny-chat)" ERRORS; fi ;;
micro)
  for b in bench_gpu_kernels bench_gpu_attention bench_gpu_sampling; do
    "$(find_bin $b)" > "$LOG_DIR/$b.log" 2>&1 && row "$b" "see $b.log" || row "$b" FAILED
  done ;;
bench)
  bench() {  # name, args...
    local name="$1"; shift
    if "$CLI" bench --backend cuda --json "$@" > "$LOG_DIR/bench_$name.json" 2> "$LOG_DIR/bench_$name.err"; then
      row "bench $name" "$(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); m=j.get('moe_routing'); print('decode %.0f tok/s, output %.0f tok/s, ttft %.1f ms, tpot %.2f ms' % (j['decode_tokens_per_s'], j['output_tokens_per_s'], 1e3*j['time_to_first_token_s'], 1e3*j['tpot_median_s']) + (', ~%.0f of %d experts per layer and step' % (m['expected_distinct_experts_per_step'], m['experts']) if m else ''))" "$LOG_DIR/bench_$name.json")"
    else status=1; row "bench $name" "FAILED: $(tail -1 "$LOG_DIR/bench_$name.err")"; fi
  }
  bench 8b_b1 --dummy llama-3.1-8b --batch 1 --input-len 128 --output-len 256 --repeat 2
  bench 1b_b1 --dummy llama-3.2-1b --batch 1 --input-len 128 --output-len 256 --repeat 2
  bench 8b_b64 --dummy llama-3.1-8b --batch 64 --input-len 128 --output-len 256 --repeat 2
  # The decode-batch GEMMs on wide_gemm (the default on sm_90 at 33-64 rows: SwiGLU gate/up, k-split
  # o/qkv/down, residual + RMSNorm fused into them) against: the norms as separate kernels
  # (fused_norm=0), only the SwiGLU gate/up on wide_gemm (wide_ksplit=0), and cuBLASLt followed by
  # silu_mul (both off), at batch 64 and 32 (Llama-8B) and 64 (1B).
  bench 8b_b64_unfused_norm --dummy llama-3.1-8b --batch 64 --input-len 128 --output-len 256 --repeat 2 --cuda-option fused_norm=0
  bench 8b_b64_swiglu_only --dummy llama-3.1-8b --batch 64 --input-len 128 --output-len 256 --repeat 2 --cuda-option wide_ksplit=0
  bench 8b_b64_cublaslt_silu --dummy llama-3.1-8b --batch 64 --input-len 128 --output-len 256 --repeat 2 --cuda-option wide_swiglu=0 --cuda-option wide_ksplit=0
  bench 8b_b32 --dummy llama-3.1-8b --batch 32 --input-len 128 --output-len 256 --repeat 2
  bench 8b_b32_cublaslt_silu --dummy llama-3.1-8b --batch 32 --input-len 128 --output-len 256 --repeat 2 --cuda-option wide_swiglu=0 --cuda-option wide_ksplit=0
  bench 1b_b64 --dummy llama-3.2-1b --batch 64 --input-len 128 --output-len 256 --repeat 2
  bench 1b_b64_cublaslt_silu --dummy llama-3.2-1b --batch 64 --input-len 128 --output-len 256 --repeat 2 --cuda-option wide_swiglu=0 --cuda-option wide_ksplit=0
  bench 8b_ttft2048 --dummy llama-3.1-8b --batch 1 --input-len 2048 --output-len 2 --repeat 3
  # The defaults against: one decode step at a time (--no-overlap-steps), the sampling's copies on
  # the compute stream, and the decode attention's few-block grids with 1 head per block (default 2).
  bench 8b_b1_no_overlap --dummy llama-3.1-8b --batch 1 --input-len 128 --output-len 256 --repeat 2 --no-overlap-steps
  bench 1b_b1_no_overlap --dummy llama-3.2-1b --batch 1 --input-len 128 --output-len 256 --repeat 2 --no-overlap-steps
  bench 8b_b64_no_overlap --dummy llama-3.1-8b --batch 64 --input-len 128 --output-len 256 --repeat 2 --no-overlap-steps
  # Decode attention of many-block grids on the CUDA-core pipeline instead of the tensor-core kernel
  # (the default).
  bench 8b_b64_pipelined --dummy llama-3.1-8b --batch 64 --input-len 128 --output-len 256 --repeat 2 --cuda-option decode_mma=0
  bench 1b_b1_computestream --dummy llama-3.2-1b --batch 1 --input-len 128 --output-len 256 --repeat 2 --cuda-option sampling_copy_stream=0
  bench 8b_b1_1head --dummy llama-3.1-8b --batch 1 --input-len 128 --output-len 256 --repeat 2 --cuda-option decode_heads_per_block=1
  bench 1b_b1_1head --dummy llama-3.2-1b --batch 1 --input-len 128 --output-len 256 --repeat 2 --cuda-option decode_heads_per_block=1
  # A mid-size batch with long contexts (few-block attention grids, 2 heads per block) against the
  # group's 4 heads per block.
  bench 8b_b8_2048 --dummy llama-3.1-8b --batch 8 --input-len 2048 --output-len 128 --repeat 2
  bench 8b_b8_2048_4heads --dummy llama-3.1-8b --batch 8 --input-len 2048 --output-len 128 --repeat 2 --cuda-option decode_heads_per_block=4
  bench 8b_offline --dummy llama-3.1-8b --num-requests 1024 --input-len 128 --output-len 128 \
    --max-num-seqs 256 --max-batched-tokens 8192 --repeat 1
  bench 8b_offline_1024 --dummy llama-3.1-8b --num-requests 1024 --input-len 128 --output-len 128 \
    --max-num-seqs 1024 --max-batched-tokens 16384 --repeat 1
  bench 8b_offline_1024_pipelined --dummy llama-3.1-8b --num-requests 1024 --input-len 128 --output-len 128 --max-num-seqs 1024 --max-batched-tokens 16384 --repeat 1 --cuda-option decode_mma=0
  # Mixture of experts (issue 6): batch 1 takes the small-batch expert path in CUDA graphs, batch 32
  # and prefill the large-batch path (eager, one host sync per MoE layer).
  bench qwen3moe_b1 --dummy qwen3-30b-a3b --batch 1 --input-len 128 --output-len 256 --repeat 2
  bench qwen3moe_b1_1head --dummy qwen3-30b-a3b --batch 1 --input-len 128 --output-len 256 --repeat 2 --cuda-option decode_heads_per_block=1
  bench qwen3moe_b32 --dummy qwen3-30b-a3b --batch 32 --input-len 128 --output-len 256 --repeat 2
  bench mixtral_b1 --dummy mixtral-8x7b --batch 1 --input-len 128 --output-len 256 --repeat 2
  # Mixtral offline: every decode step of 256 sequences reads all eight experts (93 GB), so the
  # batcher takes all 1,024 requests at once (the second row); the first keeps the dense limits.
  bench mixtral_offline_256 --dummy mixtral-8x7b --num-requests 1024 --input-len 128 --output-len 128 \
    --max-num-seqs 256 --max-batched-tokens 8192 --repeat 1
  bench mixtral_offline --dummy mixtral-8x7b --num-requests 1024 --input-len 128 --output-len 128 \
    --max-num-seqs 1024 --max-batched-tokens 16384 --repeat 1 ;;
baseline)
  for spec in "llama-3.1-8b 1" "llama-3.2-1b 1" "llama-3.1-8b 64"; do
    set -- $spec
    if python3 "$ROOT/tools/bench/torch_decoder_baseline.py" --shape "$1" --batch "$2" --steps 200 \
        > "$LOG_DIR/baseline_$1_b$2.json" 2> "$LOG_DIR/baseline_$1_b$2.err"; then
      row "torch.compile baseline $1 batch $2" "$(rate "$LOG_DIR/baseline_$1_b$2.json")"
    else row "torch.compile baseline $1 batch $2" "FAILED: $(tail -1 "$LOG_DIR/baseline_$1_b$2.err")"; fi
  done ;;
moe_baseline)
  # The MoE issue's baselines: the compiled PyTorch decoder that gathers the chosen experts, and
  # plain transformers generate (slow: few steps).
  for spec in "qwen3-30b-a3b 1" "qwen3-30b-a3b 32" "mixtral-8x7b 1"; do
    set -- $spec
    out="$LOG_DIR/baseline_$1_b$2"
    if python3 "$ROOT/tools/bench/torch_decoder_baseline.py" --shape "$1" --batch "$2" --steps 200 \
        > "$out.json" 2> "$out.err"; then row "torch.compile MoE baseline $1 batch $2" "$(rate "$out.json")"
    else row "torch.compile MoE baseline $1 batch $2" "FAILED: $(tail -1 "$out.err")"; fi
  done
  for spec in "qwen3-30b-a3b 1 32" "qwen3-30b-a3b 32 32"; do
    set -- $spec
    out="$LOG_DIR/hf_$1_b$2"
    if python3 "$ROOT/tools/bench/hf_generate_baseline.py" --shape "$1" --batch "$2" --steps "$3" \
        > "$out.json" 2> "$out.err"; then row "transformers generate $1 batch $2" "$(rate "$out.json")"
    else row "transformers generate $1 batch $2" "FAILED: $(tail -1 "$out.err")"; fi
  done ;;
esac
done
echo "logs: $LOG_DIR"
exit $status
