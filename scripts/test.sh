#!/usr/bin/env bash
# Builds atl and runs every test (unit, integration with real processes on
# 127.0.0.1, format check). Run scripts/setup.sh --tests once before.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
ctest --test-dir build --output-on-failure -j"${ATL_TEST_JOBS:-2}"
