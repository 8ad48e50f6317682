#!/usr/bin/env bash
# Misses at the speed of a warm compiler: kjitd's misses on families of
# kernels sharing their includes (CUB; cuda::std + cuda/barrier) against a
# fresh NVRTC + nvJitLink process per kernel (each family's first, second
# and 3rd-4th misses apart), and the first compile on a freshly started
# kjitd, as ratios measured in one run (bench/warm_miss_bench.py).
#
#   bench/warm_miss_bench.sh [--reps N]
#
# Needs build/bin/kjit and kjitd (built; this does not build them), the CUDA
# toolkit and a C compiler; no GPU. About 1.5 min per rep on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
for b in "${KJIT:-build/bin/kjit}" "${KJITD:-build/bin/kjitd}"; do
  [[ -x "$b" ]] || { echo "no $b: build it first (cmake --build build --target kjitd kjit)" >&2; exit 1; }
done
cuda=${CUDA_HOME:-/usr/local/cuda}
[[ -e "$cuda/lib64/libnvrtc.so" ]] || { echo "no CUDA toolkit at $cuda" >&2; exit 1; }
exec python3 bench/warm_miss_bench.py --kjit "${KJIT:-build/bin/kjit}" --kjitd "${KJITD:-build/bin/kjitd}" \
  --cuda-home "$cuda" "$@"
