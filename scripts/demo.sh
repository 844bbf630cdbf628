#!/usr/bin/env bash
# Builds atl and runs the example job on a local cluster: one head and two
# workernode processes on this machine, 2 ranks each. Prints every rank's
# output and the final state; exits with the job's status.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
export PATH="$PWD/build/bin:$PATH"
exec headnode --job examples/hello/job.json --working-dir "$PWD/examples/hello" \
  --local-workers 2 --port 0 --state-dir "${ATL_STATE_DIR:-$PWD/atl-state/demo}"
