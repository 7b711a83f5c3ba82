#!/usr/bin/env bash
# CPU decode/prefill against the machine's memory-read roofline, measured in one run:
#   membw → bench (decode, batch 1) → bench (prefill 256) → membw
# and a summary: decode tok/s vs (bandwidth / bytes of weights read per token), prefill tok/s.
# Usage: tools/bench/cpu_roofline.sh [build-dir] [shape]   (defaults: build, llama-3.2-1b)
set -euo pipefail
build=${1:-build}
shape=${2:-llama-3.2-1b}
cli=$build/apps/cli/inferdesk-cli
membw=$build/tools/membw/inferdesk-membw
out=$(mktemp -d)
$membw > "$out/bw1.json"
$cli bench --dummy "$shape" --backend cpu --batch 1 --input-len 32 --output-len 64 --repeat 3 --json > "$out/decode.json"
$cli bench --dummy "$shape" --backend cpu --batch 1 --input-len 256 --output-len 2 --repeat 3 --json > "$out/prefill.json"
$membw > "$out/bw2.json"
python3 - "$out" "$shape" <<'PY'
import json, sys, os, platform, datetime
d, shape = sys.argv[1], sys.argv[2]
bw = [json.load(open(os.path.join(d, f))) for f in ("bw1.json", "bw2.json")]
dec = json.load(open(os.path.join(d, "decode.json")))
pre = json.load(open(os.path.join(d, "prefill.json")))
bw_med = sum(b["read_gbps_median"] for b in bw) / 2
bw_best = max(b["read_gbps_best"] for b in bw)
gb = dec["weight_bytes"] / 1e9  # bytes read per decoded token (weights; tied head read once)
roof = bw_med / gb
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
print(f"date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, cpu: {cpu}, nproc: {os.cpu_count()}")
print(f"memory read bandwidth (inferdesk-membw, mean of the medians before/after): {bw_med:.1f} GB/s (best run {bw_best:.1f})")
print(f"weights read per token ({shape}, BF16): {gb:.3f} GB -> roofline {roof:.2f} tok/s, 70% = {0.7*roof:.2f}")
print(f"decode batch 1: {dec['decode_tokens_per_s']:.2f} tok/s = {100*dec['decode_tokens_per_s']/roof:.0f}% of roofline "
      f"({100*dec['decode_tokens_per_s']*gb/bw_best:.0f}% of the best bandwidth run)")
print(f"prefill 256 tokens: {pre['prefill_tokens_per_s']:.1f} tok/s (time to first token {pre['time_to_first_token_s']:.2f} s)")
print(f"peak RSS: {max(dec['peak_rss_bytes'], pre['peak_rss_bytes'])/2**30:.2f} GiB")
PY
rm -rf "$out"
