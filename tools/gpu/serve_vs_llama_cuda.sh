#!/usr/bin/env bash
# One H200 call: InferDesk's server and llama.cpp's CUDA server on the Llama-3.1-8B shape (BF16),
# the same bench-serve workloads against each, one after the other. What .devcarry/ holds and how
# it is made: docs/perf-log/2026-12-04-llama-cuda-attempt.md. Run from the repository root:
#   device run --carry .devcarry 'bash tools/gpu/serve_vs_llama_cuda.sh'
# (the tree must stay under the 64 MiB that travels: move tests/golden aside for the call).
set -u
D=$PWD/.devcarry
O=${OUT:-/tmp/out}
mkdir -p "$O"
exec > >(tee "$O/log.txt") 2>&1
cd "$D" && tar xJf tok.tar.xz && tar xJf lib.tar.xz && for f in inferdesk-cli.xz libinferdesk-cuda.so.xz llama-server.xz; do xz -dkf "$f"; done && cd - >/dev/null
mv -f "$D/inferdesk-cli" "$D/build/apps/cli/"; mv -f "$D/libinferdesk-cuda.so" "$D/build/lib/inferdesk/"
mv -f "$D/llama-server" "$D/llama/"
chmod +x "$D/build/apps/cli/inferdesk-cli" "$D/llama/llama-server"
# The Debian libraries (libcurl and its dependencies) go to the two binaries only, not to Python.
CLI_BIN=$D/build/apps/cli/inferdesk-cli
CLI="env LD_LIBRARY_PATH=$D/lib $CLI_BIN"
date -u
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
lscpu | grep -E "Model name|^CPU\(s\)"
LD_LIBRARY_PATH=$D/lib ldd "$CLI_BIN" | grep "not found"
LD_LIBRARY_PATH=$D/lib ldd "$D/llama/llama-server" | grep "not found"
$CLI --version
df -h /dev/shm /tmp | tail -2
M=/dev/shm
[ "$(df --output=avail -k /dev/shm | tail -1)" -gt 25000000 ] || M=/tmp

# The GGUF (background): tiny model -> llama.cpp's converter -> the 8B shape with random weights.
(
  t0=$(date +%s)
  python3 tools/bench/make_tiny_llama3.py "$D/tok" /tmp/tiny-l3 &&
    PYTHONPATH=$D/llama/gguf-py python3 "$D/llama/convert_hf_to_gguf.py" /tmp/tiny-l3 --outtype f16 \
      --outfile /tmp/tiny-l3.gguf &&
    PYTHONPATH=$D/llama/gguf-py python3 tools/bench/make_random_gguf.py /tmp/tiny-l3.gguf $M/l8b.gguf
  echo "gguf done rc=$? in $(( $(date +%s) - t0 )) s"
) > "$O/gguf.log" 2>&1 &
GG=$!

$CLI serve --dummy llama-3.1-8b --backend cuda --port 8003 > "$O/ours-serve.log" 2>&1 &
SP=$!

sweep() {  # engine url: each level its own run, with enough requests to hold the concurrency
  local e=$1 url=$2 il c n w seed=10
  for il in 128 1024; do
    for cn in 1:16 16:64 64:128 256:256; do
      # A seed per run: the same prompts for both engines, none sent twice to one server (its
      # prefix cache would skip their prefill).
      c=${cn%:*} n=${cn#*:} w=0 seed=$((seed + 1))
      [ "$c" = 1 ] && w=2
      timeout 150 $CLI bench-serve --url "$url" --tokenizer "$D/tok" --prompt-ids --input-len $il \
        --output-len 128 --num-prompts $n --max-concurrency $c --seed $seed --warmup $w --wait-ready 300 \
        --json >> "$O/$e.jsonl"
      echo "$e $il/128 c$c n$n rc=$? $(date -u +%T)"
    done
  done
}

wait $GG  # measured alone: the GGUF's writing would share the host with our server
tail -3 "$O/gguf.log"
sweep ours http://127.0.0.1:8003
kill -INT $SP; sleep 5; kill -9 $SP 2>/dev/null; wait $SP
ls -la $M/l8b.gguf
LD_LIBRARY_PATH=$D/lib "$D/llama/llama-server" -m $M/l8b.gguf -ngl 99 -fa -np 256 -c 327680 -t 8 --host 127.0.0.1 \
  --port 8004 > "$O/llama-serve.log" 2>&1 &
LP=$!
sweep llama http://127.0.0.1:8004
kill $LP
date -u
