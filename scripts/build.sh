#!/usr/bin/env bash
# Configures and builds atl into ./build (2 parallel jobs: CAF units are heavy).
set -euo pipefail
cd "$(dirname "$0")/.."
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
fi
cmake --build build -j"${ATL_BUILD_JOBS:-2}"
