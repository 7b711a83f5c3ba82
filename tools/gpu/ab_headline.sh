#!/usr/bin/env bash
# The five headline figures of two inferdesk-cli binaries in one call, interleaved (A B A B ...),
# so a change is judged against its parent on the same GPU and clock:
#   bash tools/gpu/ab_headline.sh OLD_CLI NEW_CLI [ROUNDS] [FIGURES...] > table.txt
# Figures (docs/PERF.md#headline): Llama-3.1-8B batch 1, Llama-3.2-1B batch 1, Llama-3.1-8B batch 64
# (128 in / 256 out: decode tok/s), 8B offline 1,024 x 128/128 (output tok/s) and the 8B TTFT of a
# 2,048-token prompt (ms). LOG_DIR (default ./ab-logs) keeps every JSON.
set -uo pipefail
A="$1"; B="$2"; ROUNDS="${3:-1}"
shift $(( $# >= 3 ? 3 : $# ))
FIGURES=("$@")
[[ ${#FIGURES[@]} -eq 0 ]] && FIGURES=(8b_b1 1b_b1 8b_b64 8b_offline 8b_ttft2048)
LOG_DIR="${LOG_DIR:-ab-logs}"
mkdir -p "$LOG_DIR"
declare -A args=(
  [8b_b1]="--dummy llama-3.1-8b --batch 1 --input-len 128 --output-len 256 --repeat 2"
  [1b_b1]="--dummy llama-3.2-1b --batch 1 --input-len 128 --output-len 256 --repeat 2"
  [8b_b64]="--dummy llama-3.1-8b --batch 64 --input-len 128 --output-len 256 --repeat 2"
  [8b_offline]="--dummy llama-3.1-8b --num-requests 1024 --input-len 128 --output-len 128 --max-num-seqs 1024 --max-batched-tokens 16384 --repeat 1"
  [8b_ttft2048]="--dummy llama-3.1-8b --batch 1 --input-len 2048 --output-len 2 --repeat 3")
declare -A field=(
  [8b_b1]=decode_tokens_per_s [1b_b1]=decode_tokens_per_s [8b_b64]=decode_tokens_per_s
  [8b_offline]=output_tokens_per_s [8b_ttft2048]=time_to_first_token_s)
figure() {  # JSON file, field: the figure (TTFT in ms with two decimals)
  python3 -c "
import json, sys
v = json.load(open(sys.argv[1]))[sys.argv[2]]
print('%.2f' % (v * 1e3) if sys.argv[2].startswith('time_') else '%.0f' % v)" "$1" "$2" 2>/dev/null || echo FAILED
}
printf '%-12s %-28s %-28s\n' figure "A: $A" "B: $B"
for name in "${FIGURES[@]}"; do
  ra=(); rb=()
  for ((r = 1; r <= ROUNDS; ++r)); do
    for side in A B; do
      cli="$A"; [[ $side == B ]] && cli="$B"
      out="$LOG_DIR/${name}_${side}_$r.json"
      # shellcheck disable=SC2086
      "$cli" bench --backend cuda --json ${args[$name]} > "$out" 2> "$LOG_DIR/${name}_${side}_$r.err"
      if [[ $side == A ]]; then ra+=("$(figure "$out" "${field[$name]}")"); else rb+=("$(figure "$out" "${field[$name]}")"); fi
    done
  done
  printf '%-12s %-28s %-28s\n' "$name" "${ra[*]}" "${rb[*]}"
done
