#!/usr/bin/env bash
# The real atl-burn on a lent GPU machine, by hand (no cluster: the device
# image has no CAF or Boost, so atl-burn is built here and carried in
# .gpu-prebuilt/ with its Boost.Program_options). What each step must show:
#   check            PASS, with NVML's findings (row remapping, clocks, power...)
#   gemm / transfer  verified rounds and a PASS verdict per GPU
#   local allreduce  one GPU: "nothing to reduce ... SKIP", no bandwidth
#   --expect-gpus 2  FAIL: the pod declares 2 GPUs but CUDA sees 1
#   no device        FAIL naming what cudaGetDeviceCount said (no CPU fallback)
#   a slow phase     FAIL: GPU 0 stuck in gemm round 1 (the phase monitor, exit 1)
# Each step under `timeout`, all output tee'd into $OUT/atl-burn.log.
# Prepare here (the folder must be ignored, then named in the device call's carry):
#   echo /.gpu-prebuilt/ >> .git/info/exclude; mkdir -p .gpu-prebuilt/lib
#   strip -o .gpu-prebuilt/atl-burn build/bin/atl-burn
#   cp -L /lib/x86_64-linux-gnu/libboost_program_options.so.1.74.0 .gpu-prebuilt/lib/
set -uo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
out="${OUT:-/tmp/atl-gpu-out}"
mkdir -p "$out"
exec > >(tee -a "$out/atl-burn.log") 2>&1
burn="$repo/.gpu-prebuilt/atl-burn"
nccl="$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null || true)"
export LD_LIBRARY_PATH="$repo/.gpu-prebuilt/lib:/usr/local/cuda/lib64${nccl:+:$nccl/lib}"
export NCCL_DEBUG=WARN
status=0

# expect RC NAME CMD...: runs CMD (60 s at most) and checks its exit status.
expect() {
  local want="$1" name="$2" rc
  shift 2
  echo "== $name: $*"
  timeout --kill-after=5 60 "$@"
  rc=$?
  if [ "$rc" -eq "$want" ]; then
    echo "== $name: exit $rc as expected"
  else
    echo "== $name: exit $rc, expected $want"
    status=1
  fi
}

if [ ! -x "$burn" ]; then
  echo "atl-burn-on-device: no $burn: build atl-burn here and carry it (see bench/results/gpu-h200.md)"
  exit 1
fi
expect 0 check "$burn" check --pod h200 --expect-gpus 1
expect 0 gemm "$burn" gemm -d 20s --pod h200 --expect-gpus 1
expect 0 transfer "$burn" transfer -d 5s --pod h200 --expect-gpus 1
expect 0 local-allreduce "$burn" allreduce --local -d 2s --pod h200 --expect-gpus 1
expect 1 declared-two "$burn" gemm -d 2s --pod h200 --expect-gpus 2
expect 1 no-device env CUDA_VISIBLE_DEVICES= "$burn" gemm -d 2s --pod h200 --expect-gpus 1
# A first round of a 32768 GEMM (8 GiB of inputs, a host spot check of
# seconds) cannot end within a 2 s watchdog: the monitor must end it.
expect 1 slow-phase "$burn" gemm -d 1s --size 32768 --timeout 2s --pod h200 --expect-gpus 1
echo "atl-burn-on-device: exit $status"
exit "$status"
