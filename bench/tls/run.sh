#!/usr/bin/env bash
# bench/tls: the CPU one TLS connection costs each side, as atl makes them
# (CAF's per-connection contexts over the job's credentials), beside TLS 1.3
# session resumption; writes bench/results/tls.md. Needs g++ and OpenSSL's
# headers (libssl-dev) and a built headnode (for --make-tls).
# Usage: bench/tls/run.sh [connections] (300 by default)
set -euo pipefail
cd "$(dirname "$0")/../.."
connections="${1:-300}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
g++ -O2 -std=c++17 -Wall -Wextra -o "$work/handshake" bench/tls/handshake.cpp -lssl -lcrypto
build/bin/headnode --make-tls "$work/tls" --job-id jo-bench-tls >/dev/null
out=bench/results/tls.md
{
  echo "# bench/tls: the CPU of one TLS connection, each side"
  echo
  echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(openssl version | cut -d' ' -f1-2), atl $(git rev-parse --short HEAD)."
  echo "Command: \`bench/tls/run.sh $connections\` (median of $connections connections a row, the rows interleaved"
  echo "connection by connection, after 20 of each). Each connection as CAF 0.17 makes one: a fresh"
  echo "context on each side with the job's certificate, key and CA (ECDSA P-256, parsed once), peer"
  echo "verification both ways, TLS 1.3 through an in-memory pipe; context, handshake and teardown timed"
  echo "on each side's thread clock."
  echo
  "$work/handshake" "$work/tls" "$connections"
  echo
  echo "Reading: CAF never offers a session again (a fresh context per connection), so atl's"
  echo "contexts send no tickets (openssl_interpose.cpp); the head makes one full handshake per"
  echo "worker and per atlctl, on its one I/O thread. Resumption (certificates skipped, ECDHE kept)"
  echo "would need the head to hand its workers a ticket beforehand: not built (issue 8's note)."
} > "$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
