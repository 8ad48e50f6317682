#!/usr/bin/env bash
# Builds and runs kjit's benchmarks, each printing its tables:
#   kjit_bench_compile   kjitd vs in-process NVRTC + nvJitLink, socket round trips
#   kjit_bench_pipeline  per-stage times of the LLVM path, pipeline machinery overhead
#   kjit_bench_confinement  cold compiles with confined workers vs --sandbox off, worker start
#   kjit_bench_libdevice  the LLVM path with libdevice math against clang-19 + nvJitLink
#   multi_target_bench.sh  a four-target fatbin against nvcc -fatbin and four single compiles
# Arguments (e.g. --reps 31) go to every benchmark. Run from anywhere inside the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f build/build.ninja ]]; then
  cmake --preset default
fi
cmake --build build --target kjit_bench_compile kjit_bench_pipeline
build/bin/kjit_bench_compile "$@"
echo
build/bin/kjit_bench_pipeline "$@"
echo
cmake --build build --target kjit_bench_confinement
build/bin/kjit_bench_confinement "$@"
echo
cmake --build build --target kjit_bench_libdevice
build/bin/kjit_bench_libdevice "$@"
echo; cmake --build build --target kjit_bench_cache && build/bin/kjit_bench_cache  # its own options (--quick), not --reps
echo; bench/multi_target_bench.sh
