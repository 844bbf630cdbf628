#!/usr/bin/env bash
# Long fuzzing runs: every parser target for RUNS executions (default 10M),
# results written to bench/results/fuzz.md. Usage: bench/fuzz/run.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-10000000}"
out=build/fuzz
tests/fuzz/run.sh build spec >/dev/null  # builds the binary (a 3 s run of one target)
results=bench/results/fuzz.md
{
  echo "# Fuzzing the parsers (libFuzzer, ASan + UBSan)"
  echo
  echo "\`bench/fuzz/run.sh $runs\` on $(nproc) cores, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD)."
  echo "Seeds: tests/fuzz/corpus/<target> (crashes found while writing the targets are kept there as regression seeds)."
  echo
  echo "| target | executions | seconds | exec/s | corpus | crashes |"
  echo "|---|---|---|---|---|---|"
} >"$results"
for t in spec ranks envs duration size hostport control; do
  mkdir -p "$out/long-$t"
  start=$(date +%s)
  status=0
  ATL_FUZZ_TARGET=$t "$out/atl_fuzz_parsers" -runs="$runs" -rss_limit_mb=2048 -max_len=65536 \
    -timeout=10 -artifact_prefix="$out/long-crash-$t-" -print_final_stats=1 \
    "$out/long-$t" "tests/fuzz/corpus/$t" >"$out/long-$t.log" 2>&1 || status=$?
  secs=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/long-$t.log" | grep -o '[0-9]*$' || echo 0)
  corpus=$(ls "$out/long-$t" | wc -l)
  crashes=$([[ $status -eq 0 ]] && echo 0 || echo "1 (see $out/long-$t.log)")
  echo "| $t | $execs | $secs | $(( execs / (secs > 0 ? secs : 1) )) | $corpus | $crashes |" >>"$results"
  echo "fuzz $t: $execs executions, $secs s, crashes: $crashes"
done
cat "$results"
