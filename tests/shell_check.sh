#!/usr/bin/env bash
# The project's shell scripts parse (bash -n) and pass shellcheck; above all
# bench/gpu/run-on-device.sh, which runs once per lent GPU machine and must
# not fail there on a typo.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
scripts=(.ci/run scripts/*.sh tests/*.sh tests/*/run.sh bench/*/*.sh)
for s in "${scripts[@]}"; do bash -n "$s"; done
shellcheck "${scripts[@]}"
echo "shell_check: ${#scripts[@]} scripts clean"
