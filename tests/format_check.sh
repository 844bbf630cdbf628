#!/usr/bin/env bash
# Fails when a C++ file differs from what .clang-format makes of it.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.cu' 2>/dev/null || find libs apps tests bench -name '*.[ch]pp')
clang-format --dry-run --Werror "${files[@]}"
echo "format: ${#files[@]} files clean"
