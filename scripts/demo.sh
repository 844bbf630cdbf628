#!/usr/bin/env bash
# Builds atl and runs the example job on a local cluster: one head and two
# workernode processes on this machine, 2 ranks each. Prints every rank's
# output and the final state; exits with the job's status.
#
#   scripts/demo.sh --ray   the Ray example instead (examples/ray): a Ray
#                           cluster of three nodes on this machine (Ray's
#                           head and the two pods, each on a loopback address
#                           of its own) running examples/ray/program.py as
#                           its driver. Needs `ray` (Ray 2.60: pip install
#                           "ray[default]==2.60.0") on PATH or $ATL_RAY_BIN.
#
# ATL_DEMO_BUILT=1 skips the build (tests/python/test_readme.py: a build while
# other tests run their binaries would relink them under those tests' feet).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ "${ATL_DEMO_BUILT:-}" == 1 ]] || ./scripts/build.sh
export PATH="$PWD/build/bin:$PATH"
if [[ "${1:-}" == "--ray" ]]; then
  ray_bin="${ATL_RAY_BIN:-$(command -v ray || true)}"
  if [[ -z "$ray_bin" ]]; then
    echo "demo.sh --ray: no 'ray' on PATH: pip install \"ray[default]==2.60.0\" (or set ATL_RAY_BIN)" >&2
    exit 2
  fi
  # The driver's python3 is the one beside `ray` (it has the ray module).
  PATH="$(dirname "$ray_bin"):$PATH"
  exec headnode --job examples/ray/job.json --ray-bin "$ray_bin" --local-workers 2 --port 0 \
    --state-dir "${ATL_STATE_DIR:-$PWD/atl-state/demo-ray}" -- python3 "$PWD/examples/ray/program.py"
fi
# The dashboard on a free port (8265 may be anyone's), up for a while after
# the job ends so that its link is worth opening.
exec headnode --job examples/hello/job.json --working-dir "$PWD/examples/hello" \
  --local-workers 2 --port 0 --state-dir "${ATL_STATE_DIR:-$PWD/atl-state/demo}" \
  --dashboard-port 0 --linger "${ATL_DEMO_LINGER:-60s}"
