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

# A Triton kernel compiled and launched through kjitd (needs the Triton
# builds install-deps puts in .deps/triton-builds).
echo "== triton launch" >> "$out/summary.txt"
triton_python=.deps/triton-builds/triton-3.9.0/bin/python
if [[ -x $triton_python ]]; then
  work=$(mktemp -d)
  build/bin/kjitd --socket "$work/kjitd.sock" --cache-dir "$work/cache" --log-level warn > "$out/triton-kjitd.log" 2>&1 &
  daemon=$!
  for _ in $(seq 600); do build/bin/kjit -s "$work/kjitd.sock" health > /dev/null 2>&1 && break; sleep 0.1; done
  KJIT_SOCKET="$work/kjitd.sock" python3 tests/gpu/triton_launch.py build/bin/kjit "$triton_python" \
    tests/triton/data/softmax.ttir "$work" >> "$out/summary.txt" 2>&1
  triton_status=$?
  kill "$daemon"; wait "$daemon" 2>/dev/null
  echo "triton exit=$triton_status" >> "$out/summary.txt"
  [[ $triton_status == 0 ]] || status=1
else
  echo "skipped: no $triton_python" >> "$out/summary.txt"
fi
exit $status
