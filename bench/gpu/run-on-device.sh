#!/usr/bin/env bash
# One prepared run for a lent GPU machine: builds libs/gpu and atl-gpu-bench
# with CMake there, runs them (every figure verified) and the torch reference,
# and prints the tables last. Usage: bench/gpu/run-on-device.sh [GEMM_SIZE] [COPY_BYTES]
set -euo pipefail
cd "$(dirname "$0")"
size="${1:-8192}"
bytes="${2:-268435456}"
build=/tmp/atl-gpu-build  # not under $OUT: build outputs need not travel back
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release > "$build.configure.log" 2>&1 || {
  cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j"$(nproc)" > "$build.build.log" 2>&1 || { tail -50 "$build.build.log"; exit 1; }
atl_table=$("$build/atl-gpu-bench" "$size" "$bytes") || status=$?
torch_table=$(python3 torch_reference.py "$size" "$bytes" 2>&1 || true)
echo
echo "## atl-gpu-bench"
echo "$atl_table"
echo
echo "## torch reference"
echo "$torch_table"
if [ -n "${OUT:-}" ]; then
  { echo "## atl-gpu-bench"; echo "$atl_table"; echo; echo "## torch reference"; echo "$torch_table"; } \
    > "$OUT/gpu-tables.md"
fi
exit "${status:-0}"
