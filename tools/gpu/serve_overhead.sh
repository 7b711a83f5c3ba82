#!/usr/bin/env bash
# The server's overhead on the GPU, measured in one call: the engine called directly
# (`inferdesk-cli bench`) against the same engine behind `inferdesk-cli serve` driven over HTTP
# by `inferdesk-cli bench-serve` (token-id prompts to /v1/completions, streamed), with random
# weights of the Llama-3.1-8B shape (no checkpoint needed):
#   1. time to first token of a single short request (32 prompt / 16 output tokens), median of
#      20 requests one at a time: the server may add at most 1 ms;
#   2. offline load, 1,024 requests of 128 / 128 tokens sent at once, streamed: output tokens/s
#      must reach at least 95% of bench's (median of 3 runs each).
# Builds nothing. Usage: tools/gpu/serve_overhead.sh BIN LOG [SHAPE]
#   BIN   folder holding inferdesk-cli (built with the CUDA backend), e.g. build/apps/cli
#   LOG   folder for every raw output (created) and summary.txt
set -euo pipefail
bin=${1:?usage: serve_overhead.sh BIN LOG [SHAPE]}
log=${2:?usage: serve_overhead.sh BIN LOG [SHAPE]}
shape=${3:-llama-3.1-8b}
cli="$bin/inferdesk-cli"
[ -x "$cli" ] || { echo "no inferdesk-cli in $bin" >&2; exit 2; }
mkdir -p "$log"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true  # 1,024 client sockets
# Same engine settings on both sides: the offline configuration of docs/PERF.md's CUDA section
# (MAX_NUM_SEQS, MAX_BATCHED override them), prefix caching off (random prompts), everything
# else at its default. SERVE_BACKEND=cpu runs the script as a dry run on a machine without GPU.
seqs=${MAX_NUM_SEQS:-1024} batched=${MAX_BATCHED:-16384}
engine=(--backend "${SERVE_BACKEND:-cuda}" --max-num-seqs "$seqs" ${ENGINE_ARGS:-})  # e.g. ENGINE_ARGS="--threads 1"
{ date -u; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total --format=csv,noheader || true; } > "$log/machine.txt"

echo "== engine directly: single request TTFT (20 requests), offline 1,024 x 128/128 (3 runs)"
"$cli" bench --dummy "$shape" "${engine[@]}" --max-batched-tokens "$batched" --batch 1 --input-len 32 --output-len 16 \
  --repeat 20 --json > "$log/engine_ttft.json"
"$cli" bench --dummy "$shape" "${engine[@]}" --max-batched-tokens "$batched" --num-requests 1024 --input-len 128 \
  --output-len 128 --repeat 3 --json > "$log/engine_offline.json"

echo "== the same engine behind serve"
port=${SERVE_PORT:-8741}
"$cli" serve --dummy "$shape" "${engine[@]}" --max-num-batched-tokens "$batched" --no-enable-prefix-caching \
  --max-waiting-requests 1024 --http-threads 4 --port "$port" > "$log/serve.log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null || true' EXIT
url="http://127.0.0.1:$port"
load=("$cli" bench-serve --url "$url" --endpoint /v1/completions --wait-ready 900 --json
      --token-id-max "${TOKEN_ID_MAX:-10000}")  # ids every vocabulary has; TOKEN_ID_MAX for tiny dry-run shapes
# Warm-up as bench does it: every decode batch size the timed runs meet (CUDA graph capture,
# GEMM autotuning), then a few single requests.
"${load[@]}" --num-requests "$seqs" --input-len 128 --output-len 3 --seed 999 > "$log/serve_warmup.json"
"${load[@]}" --num-requests 3 --max-concurrency 1 --input-len 32 --output-len 4 --seed 998 > /dev/null
"${load[@]}" --num-requests 20 --max-concurrency 1 --input-len 32 --output-len 16 --seed 1 > "$log/serve_ttft.json"
for i in 1 2 3; do
  "${load[@]}" --num-requests 1024 --input-len 128 --output-len 128 --seed "$((i + 1))" > "$log/serve_offline_$i.json"
done
kill -TERM "$server"
wait "$server" && echo "serve exited 0 on SIGTERM" || echo "serve exited $?"
trap - EXIT

SEQS=$seqs BATCHED=$batched python3 - "$log" "$shape" <<'PY' | tee "$log/summary.txt"
import json, os, statistics, sys
d, shape = sys.argv[1], sys.argv[2]
load = lambda f: json.load(open(os.path.join(d, f)))
eng_ttft, eng_off = load("engine_ttft.json"), load("engine_offline.json")
srv_ttft = load("serve_ttft.json")
srv_off = [load(f"serve_offline_{i}.json") for i in (1, 2, 3)]
print(open(os.path.join(d, "machine.txt")).read().strip())
print(f"shape {shape}, backend {os.environ.get('SERVE_BACKEND', 'cuda')}, max-num-seqs {os.environ['SEQS']}, "
      f"max-num-batched-tokens {os.environ['BATCHED']}, prefix caching off")
e_ms, s_ms = 1000 * eng_ttft["ttft_median_s"], srv_ttft["median_ttft_ms"]
print(f"single request 32/16, median TTFT over 20: engine {e_ms:.3f} ms, server {s_ms:.3f} ms "
      f"(p99 {srv_ttft['p99_ttft_ms']:.3f}), overhead {s_ms - e_ms:+.3f} ms -> {'MET' if s_ms - e_ms <= 1.0 else 'NOT MET'} (<= 1 ms)")
e_tps = eng_off["output_tokens_per_s"]
s_runs = [r["output_throughput"] for r in srv_off]
s_tps = statistics.median(s_runs)
fails = sum(r["failed"] for r in srv_off)
print(f"offline 1024 x 128/128: engine {e_tps:.0f} output tok/s (median of 3), server {s_tps:.0f} "
      f"(runs {', '.join(f'{x:.0f}' for x in s_runs)}; failed requests {fails}) = {100 * s_tps / e_tps:.1f}% "
      f"-> {'MET' if s_tps >= 0.95 * e_tps and fails == 0 else 'NOT MET'} (>= 95%)")
m = srv_off[len(srv_off) // 2]
print(f"server run 2: TTFT median {m['median_ttft_ms']:.1f} ms, TPOT median {m['median_tpot_ms']:.2f} ms, "
      f"ITL p99 {m['p99_itl_ms']:.2f} ms, duration {m['duration']:.2f} s")
PY
