#!/usr/bin/env bash
# Configure and build InferDesk into ./build (Release). Extra arguments go to cmake's configure step.
# The CUDA backend is compiled when nvcc is on PATH or at /usr/local/cuda/bin/nvcc.
set -euo pipefail
cd "$(dirname "$0")/.."
extra=()
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  extra+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${extra[@]}" "$@"
cmake --build build --parallel "$(nproc)"
