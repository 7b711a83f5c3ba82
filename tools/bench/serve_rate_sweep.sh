#!/usr/bin/env bash
# Where the server saturates: `inferdesk-cli serve` with a model on the CPU, loaded by
# `inferdesk-cli bench-serve` at increasing request rates (Poisson arrivals, then all at once),
# one table row per rate: offered and achieved request rate, output tokens/s, TTFT / TPOT / ITL,
# failures. Builds nothing; every raw JSON result stays in LOG.
# Usage: tools/bench/serve_rate_sweep.sh BIN LOG [MODEL_DIR] [RATES]
#   BIN        folder holding inferdesk-cli (e.g. build/apps/cli)
#   MODEL_DIR  default tests/golden/models/tiny-chat
#   RATES      default "25 50 100 200 400 800 inf" (requests/s)
# Environment: REQUESTS (300), INPUT_LEN (32), OUTPUT_LEN (32), THREADS (1: the engine's CPU
# threads; on a 2-core machine the HTTP threads and the load generator need the other core).
set -euo pipefail
bin=${1:?usage: serve_rate_sweep.sh BIN LOG [MODEL_DIR] [RATES]}
log=${2:?usage: serve_rate_sweep.sh BIN LOG [MODEL_DIR] [RATES]}
model=${3:-tests/golden/models/tiny-chat}
rates=${4:-25 50 100 200 400 800 inf}
requests=${REQUESTS:-300} input_len=${INPUT_LEN:-32} output_len=${OUTPUT_LEN:-32}
cli="$bin/inferdesk-cli"
mkdir -p "$log"
port=${SERVE_PORT:-8742}
"$cli" serve --model "$model" --backend cpu --threads "${THREADS:-1}" --port "$port" \
  --max-num-seqs 256 --max-waiting-requests 4096 > "$log/serve.log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null || true' EXIT
url="http://127.0.0.1:$port"
vocab=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['vocab_size'])" "$model/config.json")
load=("$cli" bench-serve --url "$url" --wait-ready 120 --json --input-len "$input_len" --output-len "$output_len"
      --token-id-max "$((vocab < 10000 ? vocab - 10 : 10000))" --percentiles 50,99)
"${load[@]}" --num-requests 50 --seed 999 > /dev/null  # warm-up
for rate in $rates; do
  "${load[@]}" --num-requests "$requests" --request-rate "$rate" --seed 1 > "$log/rate_$rate.json"
done
kill -TERM "$server"
wait "$server" || true
trap - EXIT
python3 - "$log" "$rates" <<'PY' | tee "$log/summary.txt"
import json, os, sys
d, rates = sys.argv[1], sys.argv[2].split()
print("| offered req/s | achieved req/s | output tok/s | TTFT median / p99 (ms) | TPOT median (ms) | ITL p99 (ms) | max concurrent | failed |")
print("|---|---|---|---|---|---|---|---|")
for r in rates:
    j = json.load(open(os.path.join(d, f"rate_{r}.json")))
    print(f"| {r} | {j['request_throughput']:.1f} | {j['output_throughput']:.0f} | {j['median_ttft_ms']:.1f} / {j['p99_ttft_ms']:.1f} "
          f"| {j['median_tpot_ms']:.2f} | {j['p99_itl_ms']:.2f} | {j['max_concurrent_requests']} | {j['failed']} |")
PY
