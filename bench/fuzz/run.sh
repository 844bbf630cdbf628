#!/usr/bin/env bash
# Long fuzzing runs: each parser target for RUNS executions (default 10M),
# JOBS targets at a time (default: the number of cores), then the table in
# bench/results/fuzz.md. Usage: bench/fuzz/run.sh [RUNS] [TARGET...]
# (named targets only re-run those; the table keeps the other targets' rows).
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-10000000}"
shift || true
all=(spec ranks envs duration size hostport control placement jobfile metrics)
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${all[@]}")
jobs="${JOBS:-$(nproc)}"
out=build/fuzz
tests/fuzz/run.sh build spec >/dev/null  # builds the binary (a 3 s run of one target)

one() {
  local t=$1
  mkdir -p "$out/long-$t"
  local start status=0
  start=$(date +%s)
  ATL_FUZZ_TARGET=$t "$out/atl_fuzz_parsers" -runs="$runs" -rss_limit_mb=2048 -max_len=65536 \
    -timeout=10 -artifact_prefix="$out/long-crash-$t-" -print_final_stats=1 \
    "$out/long-$t" "tests/fuzz/corpus/$t" >"$out/long-$t.log" 2>&1 || status=$?
  local secs execs corpus crashes
  secs=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/long-$t.log" | grep -o '[0-9]*$' || echo 0)
  corpus=$(find "$out/long-$t" -maxdepth 1 -type f | wc -l)
  crashes=$([[ $status -eq 0 ]] && echo 0 || echo "1 (see $out/long-$t.log)")
  echo "| $t | $execs | $secs | $(( execs / (secs > 0 ? secs : 1) )) | $corpus | $crashes |" >"$out/long-$t.row"
  echo "fuzz $t: $execs executions, $secs s, crashes: $crashes"
}

running=0
for t in "${targets[@]}"; do
  one "$t" &
  running=$((running + 1))
  if [[ $running -ge $jobs ]]; then wait -n; running=$((running - 1)); fi
done
wait

results=bench/results/fuzz.md
{
  echo "# Fuzzing the parsers (libFuzzer, ASan + UBSan)"
  echo
  echo "\`bench/fuzz/run.sh $runs\` on $(nproc) cores ($jobs targets at a time), $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD)."
  echo "Seeds: tests/fuzz/corpus/<target> (inputs that found bugs while the targets were written stay there as regression seeds)."
  echo "exec/s falls as the corpus grows (the spec target: ~40k/s at first, ~12k/s at the end)."
  echo
  echo "| target | executions | seconds | exec/s | corpus | crashes |"
  echo "|---|---|---|---|---|---|"
  for t in "${all[@]}"; do
    [[ -f "$out/long-$t.row" ]] && cat "$out/long-$t.row" || echo "| $t | not run | | | | |"
  done
} >"$results"
cat "$results"
