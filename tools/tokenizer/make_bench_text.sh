#!/usr/bin/env bash
# Writes a ~1 MB English + code text for the tokenizer throughput benchmark (to $1, default
# /tmp/tok-bench.txt): Debian's license texts (English prose) interleaved with Python standard-library
# and libstdc++ sources (code with comments). Only files every Debian 12 machine has; not committed.
set -euo pipefail
out="${1:-/tmp/tok-bench.txt}"
tmp="$(mktemp)"
{
  for f in Apache-2.0 GPL-3 LGPL-2.1 MPL-2.0 GFDL-1.3 Artistic; do
    cat "/usr/share/common-licenses/$f"
    py=$(ls /usr/lib/python3.11/*.py | sort | sed -n "$(( ${#f} * 7 )),$(( ${#f} * 7 + 6 ))p")
    cat $py
  done
  cat /usr/include/c++/12/bits/stl_vector.h /usr/include/c++/12/bits/stl_algo.h
} > "$tmp"
head -c 1000000 "$tmp" > "$out"
rm -f "$tmp"
echo "wrote $(wc -c < "$out") bytes to $out"
