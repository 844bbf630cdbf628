#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each one on its
# seeded corpus (tests/fuzz/corpus/<target>) for ATL_FUZZ_SECONDS (default 3).
# Usage: tests/fuzz/run.sh BUILD_DIR [TARGET...]. Any crash, sanitizer report
# or broken invariant fails the run and leaves the input in BUILD_DIR/fuzz/.
# Long runs: bench/fuzz/run.sh.
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
out="$1/fuzz"
shift
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(spec ranks envs duration size hostport control placement jobfile metrics stacks dashboard)
seconds="${ATL_FUZZ_SECONDS:-3}"
mkdir -p "$out"

binary="$out/atl_fuzz_parsers"
sources=(
  "$src"/libs/runtime/core/src/*.cpp
  "$src"/libs/gpu/src/rendezvous.cpp "$src"/libs/gpu/src/burn_types.cpp
  "$src"/libs/gpu/src/xid.cpp "$src"/libs/gpu/src/hex.cpp
  "$src"/libs/runtime/os/src/job_pointer.cpp
  "$src"/tests/fuzz/fuzz_parsers.cpp
)
# Rebuilt when any source or header is newer than the binary. (This was
# `ls -t ... | head -1` under pipefail: once the list outgrew head's first
# read, ls could die of SIGPIPE and end the script with no output at all.)
stale=0
[[ -x "$binary" ]] || stale=1
for f in "${sources[@]}" "$src"/libs/runtime/core/include/atl/core/*.hpp \
  "$src"/libs/gpu/include/atl/gpu/*.hpp "$src"/libs/runtime/os/include/atl/os/job_pointer.hpp "$0"; do
  [[ "$f" -nt "$binary" ]] && stale=1
done
if [[ $stale -eq 1 ]]; then
  echo "fuzz: building $binary"
  # shellcheck disable=SC2054  # -fsanitize takes a comma list
  flags=(-std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
         -I"$src"/libs/runtime/core/include -I"$src"/libs/gpu/include
         -I"$src"/libs/runtime/os/include)
  pids=()
  objs=()
  for f in "${sources[@]}"; do
    o="$out/$(basename "$(dirname "$(dirname "$f")")")_$(basename "$f" .cpp).o"
    objs+=("$o")
    clang++ "${flags[@]}" -c "$f" -o "$o" &
    pids+=($!)
    if [[ ${#pids[@]} -ge 2 ]]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
  done
  for p in "${pids[@]}"; do wait "$p"; done
  clang++ "${flags[@]}" "${objs[@]}" -o "$binary"
fi

failed=0
for t in "${targets[@]}"; do
  seeds="$src/tests/fuzz/corpus/$t"
  work="$out/corpus-$t"
  mkdir -p "$work"
  log="$out/$t.log"
  # A fixed seed (ATL_FUZZ_SEED, default 1): the same run on every machine.
  if ATL_FUZZ_TARGET="$t" "$binary" -max_total_time="$seconds" -seed="${ATL_FUZZ_SEED:-1}" -rss_limit_mb=2048 \
      -max_len=65536 -timeout=10 -artifact_prefix="$out/crash-$t-" -print_final_stats=1 \
      "$work" "$seeds" >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    echo "fuzz $t: ok, $runs executions in ${seconds}s"
  else
    echo "fuzz $t: FAILED (see $log)"
    tail -30 "$log"
    failed=1
  fi
done
exit $failed
