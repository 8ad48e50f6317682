#!/usr/bin/env bash
# The device check, as one script for a machine with an NVIDIA GPU: builds
# what the GPU tests need, runs them, and writes the results under $OUT
# (default: build/gpu-results). Never part of `make test`.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-build/gpu-results}
mkdir -p "$out"
{
  echo "== device"; nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv 2>&1 || true
  echo "== build"
} > "$out/summary.txt"
scripts/install-deps.sh >> "$out/build.log" 2>&1
[[ -f build/build.ninja ]] || cmake --preset default >> "$out/build.log" 2>&1
cmake --build build -j "$(nproc)" --target kjitd kjit kjit_gpu_tests >> "$out/build.log" 2>&1 || {
  echo "build failed (see build.log)" >> "$out/summary.txt"; tail -40 "$out/build.log" >> "$out/summary.txt"; exit 1; }
echo "== kjit_gpu_tests" >> "$out/summary.txt"
build/bin/kjit_gpu_tests --gtest_output="xml:$out/gpu-tests.xml" > "$out/gpu-tests.txt" 2>&1
status=$?
cat "$out/gpu-tests.txt" >> "$out/summary.txt"
echo "exit=$status" >> "$out/summary.txt"
exit $status
