#!/usr/bin/env bash
# Builds kjit_bench_compile if needed and runs it; arguments go to the
# benchmark (e.g. --reps 31). Run from anywhere inside the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f build/build.ninja ]]; then
  cmake --preset default
fi
cmake --build build --target kjit_bench_compile
exec build/bin/kjit_bench_compile "$@"
