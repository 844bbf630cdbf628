#!/usr/bin/env bash
# shellcheck disable=SC2317  # probe and build run through bash -c (step)
# One prepared run for a lent GPU machine (bench/results/gpu-h200.md holds
# what it printed). Steps, each under `timeout` and all output tee'd into
# $OUT as it goes, so a run that hangs or is killed still tells what it did:
#   probe    compiler, CMake, Ninja, driver, and where cuBLAS and NCCL are
#            (the toolkit, or Python wheels with only libnccl.so.2)
#   build    libs/gpu + atl-gpu-bench with CMake and Ninja (falls back to a
#            binary carried in .gpu-prebuilt/ when the build fails there)
#   bench    atl-gpu-bench: every figure verified, a burn last, while
#            nvidia-smi samples power, clocks, temperature and clock event
#            reasons every 250 ms (queries only: no setting is changed)
#   torch    the same measures with PyTorch on the same data distribution
# and the tables last. At most 8 files land in $OUT (the tool's limit).
# Usage: bench/gpu/run-on-device.sh [GEMM_SIZE] [COPY_BYTES] [BURN_SECONDS]
set -uo pipefail  # not -e: every step runs and reports; the exit status is the worst
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
size="${1:-8192}"
bytes="${2:-268435456}"
burn="${3:-30}"
out="${OUT:-/tmp/atl-gpu-out}"
mkdir -p "$out"
exec > >(tee -a "$out/run.log") 2>&1
export PYTHONUNBUFFERED=1 NCCL_DEBUG=WARN
status=0

# step NAME SECONDS LOG CMD...: runs CMD under timeout, its output shown and
# kept in LOG, and says how it ended. A shell function runs through bash -c
# (timeout runs programs), so the functions below are exported.
step() {
  local name="$1" limit="$2" log="$3" rc
  shift 3
  echo "== $name (limit ${limit}s) at $(date +%T)"
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "== $name: TIMED OUT after ${limit}s"
  elif [ "$rc" -ne 0 ]; then
    echo "== $name: exit $rc"
  else
    echo "== $name: done at $(date +%T)"
  fi
  [ "$rc" -eq 0 ] || status=1
  return "$rc"
}

# A Python wheel's folder (site-packages/nvidia/NAME), or nothing.
wheel_dir() {
  python3 -c "import importlib, sys; m = importlib.import_module('nvidia.$1'); print(list(m.__path__)[0])" \
    2>/dev/null || true
}

probe() {
  uname -a
  nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit,pcie.link.gen.max,pcie.link.width.max \
    --format=csv || true
  command -v nvcc && nvcc --version | tail -2
  cmake --version | head -1
  ninja --version
  g++ --version | head -1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' || true
  ls /usr/local/cuda/include/cublas_v2.h /usr/local/cuda/include/nccl.h 2>&1
  find /usr/local/cuda/lib64/ -maxdepth 1 \( -name '*cublas*' -o -name '*nccl*' -o -name '*cudart*' \) 2>/dev/null
  echo "cublas wheel: $(wheel_dir cublas)"
  echo "nccl wheel: $(wheel_dir nccl)"
  for d in "$(wheel_dir cublas)" "$(wheel_dir nccl)"; do
    [ -n "$d" ] && find "$d" -maxdepth 2 \( -name '*.so*' -o -name '*.h' \) | head -20
  done
  nvidia-smi --help-query-gpu | grep -iE 'clocks_event_reasons.active|clocks_throttle_reasons.active' | head -2
  return 0
}

build() {
  local cublas nccl
  cublas="$(wheel_dir cublas)"
  nccl="$(wheel_dir nccl)"
  cmake -S "$here" -B /tmp/atl-gpu-build -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCUBLAS_ROOT="$cublas" -DNCCL_ROOT="$nccl" && cmake --build /tmp/atl-gpu-build -j "$(nproc)"
}

# Library folders a binary built elsewhere needs (cuBLAS, NCCL from wheels).
library_path() {
  local p="/usr/local/cuda/lib64" d
  for d in "$(wheel_dir cublas)" "$(wheel_dir nccl)" "$(wheel_dir cuda_runtime)"; do
    [ -n "$d" ] && p="$p:$d/lib"
  done
  echo "$p"
}

export here
export -f wheel_dir probe build
step probe 60 /dev/null bash -c probe
bench=/tmp/atl-gpu-build/atl-gpu-bench
if ! step build 240 "$out/build.log" bash -c build; then
  if [ -x "$repo/.gpu-prebuilt/atl-gpu-bench" ]; then
    echo "== using the carried .gpu-prebuilt/atl-gpu-bench"
    bench="$repo/.gpu-prebuilt/atl-gpu-bench"
    LD_LIBRARY_PATH="$(library_path)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
  fi
fi

# nvidia-smi samples in the background for the whole bench (the burn last).
reasons=clocks_event_reasons.active
nvidia-smi --help-query-gpu | grep -q "$reasons" || reasons=clocks_throttle_reasons.active
nvidia-smi --query-gpu=timestamp,power.draw,power.limit,clocks.sm,clocks.mem,temperature.gpu,$reasons,utilization.gpu,pcie.link.gen.current,pcie.link.width.current \
  --format=csv,nounits -lms 250 > "$out/smi.csv" 2>&1 &
smi=$!
step bench 300 "$out/atl-bench.txt" "$bench" "$size" "$bytes" "$burn"
kill "$smi" 2>/dev/null
wait "$smi" 2>/dev/null
step torch 180 "$out/torch.txt" python3 "$here/torch_reference.py" "$size" "$bytes"

summarize_smi() {
  python3 - "$out/smi.csv" <<'PY' || true
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
if len(rows) < 2:
    print("nvidia-smi sampled nothing"); sys.exit()
head = [h.strip() for h in rows[0]]
data = [[c.strip() for c in r] for r in rows[1:] if len(r) == len(head)]
def col(name):
    i = next((k for k, h in enumerate(head) if h.startswith(name)), None)
    out = []
    for r in data:
        try: out.append(float(r[i]))
        except (TypeError, ValueError): pass
    return out
reasons = next((k for k, h in enumerate(head) if "reasons" in h), None)
seen = sorted({r[reasons] for r in data}) if reasons is not None else []
print(f"| nvidia-smi, {len(data)} samples at 250 ms | max |")
print("|---|---:|")
for name, label in (("power.draw", "power (W)"), ("power.limit", "power limit (W)"),
                    ("clocks.current.sm", "SM clock (MHz)"), ("clocks.current.memory", "memory clock (MHz)"),
                    ("temperature.gpu", "temperature (C)"), ("utilization.gpu", "utilization (%)"),
                    ("pcie.link.gen.current", "PCIe gen"), ("pcie.link.width.current", "PCIe width")):
    v = col(name)
    if v: print(f"| {label} | {max(v):.0f} |")
print(f"| clock event reasons seen | {' '.join(seen)} |")
PY
}

echo
echo "## atl-gpu-bench"
grep -E '^(\||backend:|atl-gpu-bench)' "$out/atl-bench.txt"
echo
echo "## torch reference"
grep -E '^(\||torch reference)' "$out/torch.txt"
echo
echo "## nvidia-smi during the bench"
summarize_smi
echo "run-on-device: exit $status"
exit "$status"
