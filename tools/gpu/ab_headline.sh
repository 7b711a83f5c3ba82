#!/usr/bin/env bash
# The headline decode figures of two inferdesk-cli binaries in one call, interleaved (A B A B ...),
# so a change is judged against its parent on the same GPU and clock:
#   bash tools/gpu/ab_headline.sh OLD_CLI NEW_CLI [ROUNDS] > table.txt
# Figures: Llama-3.1-8B batch 1, Llama-3.2-1B batch 1, Llama-3.1-8B batch 64 (128 in / 256 out),
# decode tok/s from `bench --json`. LOG_DIR (default ./ab-logs) keeps every JSON.
set -uo pipefail
A="$1"; B="$2"; ROUNDS="${3:-1}"
LOG_DIR="${LOG_DIR:-ab-logs}"
mkdir -p "$LOG_DIR"
declare -A args=(
  [8b_b1]="--dummy llama-3.1-8b --batch 1 --input-len 128 --output-len 256 --repeat 2"
  [1b_b1]="--dummy llama-3.2-1b --batch 1 --input-len 128 --output-len 256 --repeat 2"
  [8b_b64]="--dummy llama-3.1-8b --batch 64 --input-len 128 --output-len 256 --repeat 2")
rate() { python3 -c "import json,sys; print('%.0f' % json.load(open(sys.argv[1]))['decode_tokens_per_s'])" "$1" 2>/dev/null || echo FAILED; }
printf '%-8s %-28s %-28s\n' figure "A: $A" "B: $B"
for name in 8b_b1 1b_b1 8b_b64; do
  ra=(); rb=()
  for ((r = 1; r <= ROUNDS; ++r)); do
    for side in A B; do
      cli="$A"; [[ $side == B ]] && cli="$B"
      out="$LOG_DIR/${name}_${side}_$r.json"
      # shellcheck disable=SC2086
      "$cli" bench --backend cuda --json ${args[$name]} > "$out" 2> "$LOG_DIR/${name}_${side}_$r.err"
      if [[ $side == A ]]; then ra+=("$(rate "$out")"); else rb+=("$(rate "$out")"); fi
    done
  done
  printf '%-8s %-28s %-28s\n' "$name" "${ra[*]}" "${rb[*]}"
done
